//! What people say of findings, recorded once for every front end: a finding dismissed as
//! wrong (or its dismissal forgotten), and a rule silenced in one file. The CLI (`sift
//! feedback`) and the language server (`sift.dismiss`, `sift.silence`) both call these, so a
//! dismissal means the same whoever made it. Each is recorded as the finding's fate
//! ([`crate::fates`]) by the same call.
//!
//! Dismissals are appended to `.sift/feedback/dismissed.jsonl` (the rules engine's log, see
//! `sift_runtime::rules::feedback`); a silence is an entry of `[review.rules.per_path_disable]`
//! in `.sift/config.toml` (of `[rules.per_path_disable]` in the old `.sift/review.toml` while
//! that file holds the rules, so they stay in one place).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sift_runtime::rules::config::{silence_rule_in, silence_rule_under};
use sift_runtime::rules::feedback::{self, Dismissal, Feedback, Record};

use super::Result;
use super::settings::{MODEL_CONFIG, REVIEW_CONFIG, rules_config_in};
use crate::fates::{Event, Fate, Kind, Recorder};

/// The dismissals of the repository at `root` (its working tree's file).
pub fn dismissed(root: &Path) -> Result<Feedback> {
    Ok(Feedback::load(&feedback::dismissed_path(root))?)
}

/// Records that the finding `fingerprint` (of `rule`, in `path`) is wrong, or right but not
/// worth raising (`noise`: the pull-request bot's `/sift noise` and 👎), with the user's
/// `reason`; returns the file it was recorded in. Both leave the finding out of later reviews;
/// the record of fates tells them apart.
pub fn dismiss(
    root: &Path,
    recorder: &Recorder,
    fingerprint: &str,
    rule: &str,
    path: &str,
    reason: Option<String>,
    noise: bool,
) -> Result<PathBuf> {
    let file = feedback::dismissed_path(root);
    let verdict = if noise { Fate::DismissedNoise } else { Fate::DismissedWrong };
    let fate = Event::new(Kind::Finding, fingerprint, verdict)
        .rule(rule)
        .path(path)
        .reason(reason.as_deref());
    let record = Record::Dismiss(Dismissal {
        fingerprint: fingerprint.to_owned(),
        rule: rule.to_owned(),
        path: path.to_owned(),
        time: feedback::rfc3339(SystemTime::now()),
        reason,
    });
    feedback::append(&file, &record)?;
    recorder.record(fate);
    Ok(file)
}

/// Forgets the dismissal of `fingerprint`, so the finding is raised again. `false` when it was
/// not dismissed (nothing is written then).
pub fn forget(root: &Path, recorder: &Recorder, fingerprint: &str) -> Result<bool> {
    let file = feedback::dismissed_path(root);
    if !Feedback::load(&file)?.is_dismissed(fingerprint) {
        return Ok(false);
    }
    let record = Record::Forget {
        fingerprint: fingerprint.to_owned(),
        time: feedback::rfc3339(SystemTime::now()),
    };
    feedback::append(&file, &record)?;
    recorder.record(Event::new(Kind::Finding, fingerprint, Fate::Forgotten));
    Ok(true)
}

/// Turns `rule` off for the file `path` in the file that holds the repository's review rules
/// (see the module documentation), and returns that file; `None` when it was off there
/// already.
pub fn silence(
    root: &Path,
    recorder: &Recorder,
    path: &str,
    rule: &str,
) -> Result<Option<&'static str>> {
    let (_, file) = rules_config_in(root)?;
    let changed = if file == REVIEW_CONFIG {
        silence_rule_in(&root.join(REVIEW_CONFIG), path, rule)?
    } else {
        silence_rule_under(&root.join(MODEL_CONFIG), &["review"], path, rule)?
    };
    if changed {
        recorder.record(Event::new(Kind::Finding, rule, Fate::Silenced).rule(rule).path(path));
    }
    Ok(changed.then_some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dismissal_is_recorded_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let recorder = Recorder::open(root, &Default::default(), crate::fates::Front::CLI);
        assert!(!forget(root, &recorder, "abc").unwrap(), "nothing to forget yet");
        let file = dismiss(root, &recorder, "abc", "python/x", "a.py", Some("noise".into()), false)
            .unwrap();
        assert!(file.ends_with(".sift/feedback/dismissed.jsonl"));
        let found = dismissed(root).unwrap();
        assert!(found.is_dismissed("abc"));
        assert_eq!(found.dismissed().next().unwrap().reason.as_deref(), Some("noise"));
        assert!(forget(root, &recorder, "abc").unwrap());
        assert!(!dismissed(root).unwrap().is_dismissed("abc"));
        recorder.flush();
        let fates = crate::fates::read(&crate::store::open(root).unwrap()).unwrap().records;
        let got: Vec<(&str, Fate, Option<&str>, Option<&str>)> = fates
            .iter()
            .map(|e| (e.id.as_str(), e.fate, e.rule.as_deref(), e.reason.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("abc", Fate::DismissedWrong, Some("python/x"), Some("noise")),
                ("abc", Fate::Forgotten, None, None)
            ]
        );
    }

    #[test]
    fn a_silence_goes_to_the_configuration_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".sift/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, "[index]\nmax_file_size = \"2 MiB\"\n").unwrap();
        let off = Recorder::off();
        assert_eq!(silence(dir.path(), &off, "src/a.py", "python/x").unwrap(), Some(MODEL_CONFIG));
        assert_eq!(silence(dir.path(), &off, "src/a.py", "python/x").unwrap(), None);
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.starts_with("[index]\nmax_file_size"), "the rest is kept: {text}");
        assert!(
            text.contains("[review.rules.per_path_disable]\n\"/src/a.py\" = [\"python/x\"]"),
            "{text}"
        );
        let (rules, from) = rules_config_in(dir.path()).unwrap();
        assert_eq!(from, MODEL_CONFIG);
        assert_eq!(rules.rules.per_path_disable["/src/a.py"], ["python/x"]);
        assert!(!dir.path().join(REVIEW_CONFIG).exists());
    }

    #[test]
    fn a_silence_goes_to_the_old_file_while_it_holds_the_rules() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(REVIEW_CONFIG);
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, "[rules]\ndisable = [\"python/y\"]\n").unwrap();
        let off = Recorder::off();
        assert_eq!(silence(dir.path(), &off, "src/a.py", "python/x").unwrap(), Some(REVIEW_CONFIG));
        let text = std::fs::read_to_string(&old).unwrap();
        assert!(text.contains("python/x") && text.contains("src/a.py"), "{text}");
        assert!(!dir.path().join(MODEL_CONFIG).exists());
    }
}
