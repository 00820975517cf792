//! `.sift/learned.toml`: rules this repository keeps dismissing, demoted. A committed,
//! reviewable file that `sift feedback learn --write` writes from the evidence and the review
//! reads like its other settings (from the base revision in a `--base` review, so a pull
//! request cannot quiet its own review; its edits to the file are reported).
//!
//! An entry may only make sift quieter: lower a rule's severity, or turn it off, never raise
//! one (an entry that would is ignored). Each carries its evidence (how many distinct findings
//! were dismissed, between which dates) and lapses on its `expires` date unless a later `learn`
//! confirms it. `sift review --explain` shows every entry applied, with its evidence.
//!
//! The thresholds of a proposal ([`propose`]): at least [`MIN_DISMISSED`] distinct findings of
//! the rule dismissed in the last [`WINDOW_DAYS`] days (the committed dismissals of
//! `.sift/feedback/dismissed.jsonl`, everyone's), and, where this machine's record of fates
//! saw the rule's findings shown, at least half of those shown dismissed. The demotion is one
//! step below the rule's severity now (error → warning → info → off); the entry expires
//! [`WINDOW_DAYS`] days after the last dismissal.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sift_runtime::rules::Severity;
use sift_runtime::rules::feedback::Feedback;

/// The file, relative to the repository root.
pub const LEARNED: &str = ".sift/learned.toml";
/// Distinct dismissed findings a demotion needs.
pub const MIN_DISMISSED: usize = 5;
/// How far back dismissals count, and how long an entry lasts after the last one (days).
pub const WINDOW_DAYS: u64 = 90;

const DAY: u64 = 86_400;

/// What a rule is demoted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported.
    Off,
    /// Reported as info.
    Info,
    /// Reported as a warning.
    Warning,
}

impl Level {
    /// One step below `severity`.
    pub fn below(severity: Severity) -> Level {
        match severity {
            Severity::Error => Level::Warning,
            Severity::Warning => Level::Info,
            Severity::Info => Level::Off,
        }
    }

    /// The severity it reports at; `None` for off.
    pub fn severity(self) -> Option<Severity> {
        match self {
            Level::Off => None,
            Level::Info => Some(Severity::Info),
            Level::Warning => Some(Severity::Warning),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Off => "off",
            Level::Info => "info",
            Level::Warning => "warning",
        })
    }
}

/// One demoted rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Demotion {
    /// The rule's id.
    pub rule: String,
    /// What it is demoted to.
    pub to: Level,
    /// Distinct findings of it dismissed in the window.
    pub dismissed: usize,
    /// The first dismissal counted, `YYYY-MM-DD`.
    pub since: String,
    /// The last one, `YYYY-MM-DD`.
    pub last: String,
    /// The day it lapses, `YYYY-MM-DD`, unless a later `learn` confirms it.
    pub expires: String,
}

impl Demotion {
    /// Whether it is in force on `today` (`YYYY-MM-DD`).
    pub fn active(&self, today: &str) -> bool {
        today < self.expires.as_str()
    }

    /// Its evidence, in words.
    pub fn evidence(&self) -> String {
        format!(
            "{} findings dismissed between {} and {}; expires {}",
            self.dismissed, self.since, self.last, self.expires
        )
    }
}

/// The file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Learned {
    /// The demoted rules.
    #[serde(default, rename = "demote")]
    pub demotions: Vec<Demotion>,
}

const HEADER: &str = "# Rules this repository keeps dismissing, demoted by `sift feedback learn --write`.\n# Review it like code: an entry only makes sift quieter (a lower severity, or off), carries its\n# evidence, and lapses on `expires` unless a later `sift feedback learn --write` confirms it.\n# See docs/feedback.md.\n\n";

impl Learned {
    /// Parses the file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Learned, String> {
        toml::from_str(text).map_err(|e| format!("{origin}: {e}"))
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// The entry of `rule` in force on `today`.
    pub fn active(&self, rule: &str, today: &str) -> Option<&Demotion> {
        self.demotions.iter().find(|d| d.rule == rule && d.active(today))
    }
}

/// The demotions the evidence supports on the day `now` (seconds): see the module doc.
/// `severity_of` gives a rule's severity as the review reports it now (configured); `shown`,
/// this machine's count of the rule's findings shown, where known.
pub fn propose(
    dismissals: &Feedback,
    severity_of: &dyn Fn(&str) -> Option<Severity>,
    shown: &dyn Fn(&str) -> Option<usize>,
    now: u64,
) -> Vec<Demotion> {
    let from = date(now.saturating_sub(WINDOW_DAYS * DAY));
    let mut by_rule: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for d in dismissals.dismissed() {
        let day = d.time.get(..10).unwrap_or("");
        if day >= from.as_str() {
            by_rule.entry(d.rule.as_str()).or_default().push(day);
        }
    }
    let mut out = Vec::new();
    for (rule, mut days) in by_rule {
        let dismissed = days.len();
        if dismissed < MIN_DISMISSED {
            continue;
        }
        if shown(rule).is_some_and(|shown| dismissed * 2 < shown) {
            continue;
        }
        let Some(severity) = severity_of(rule) else { continue };
        days.sort_unstable();
        let (since, last) = (days[0].to_owned(), days[days.len() - 1].to_owned());
        let expires = date(day_start(&last).unwrap_or(now) + WINDOW_DAYS * DAY);
        out.push(Demotion {
            rule: rule.to_owned(),
            to: Level::below(severity),
            dismissed,
            since,
            last,
            expires,
        });
    }
    out
}

/// The file after a `learn` on `today`: the proposals, and the entries they do not replace
/// while still in force (lapsed ones go). A proposal for a rule already demoted keeps the
/// quieter level of the two (the rule's severity the proposal saw is already the demoted one).
pub fn merge(old: &Learned, proposals: Vec<Demotion>, today: &str) -> Learned {
    let mut by_rule: BTreeMap<String, Demotion> = old
        .demotions
        .iter()
        .filter(|d| d.active(today))
        .map(|d| (d.rule.clone(), d.clone()))
        .collect();
    for p in proposals {
        match by_rule.get(&p.rule) {
            Some(kept) if kept.to < p.to => {
                let to = kept.to;
                by_rule.insert(p.rule.clone(), Demotion { to, ..p });
            }
            _ => {
                by_rule.insert(p.rule.clone(), p);
            }
        }
    }
    Learned { demotions: by_rule.into_values().collect() }
}

/// What `sift feedback learn` found: the proposals, the file as it is and as it would be.
#[derive(Debug, Clone)]
pub struct Learning {
    /// The demotions the evidence supports now.
    pub proposals: Vec<Demotion>,
    /// `.sift/learned.toml` as it is in the working tree.
    pub current: Learned,
    /// The file after [`merge`].
    pub next: Learned,
    /// Today, `YYYY-MM-DD`.
    pub today: String,
    /// Dismissals counted (the window's).
    pub dismissals: usize,
}

/// Looks at the repository at `root` on the day `now` (seconds): its committed dismissals, its
/// rules as configured in the working tree, this machine's record of fates; proposes, and
/// merges with the file as it is. Writes nothing.
pub fn learn(root: &std::path::Path, now: u64) -> super::Result<Learning> {
    let root = super::repository_root(root)?;
    let settings = super::Settings::working_tree(&root)?;
    let mut pack = sift_runtime::rules::RulePack::builtin_all();
    pack.extend(settings.rules.clone());
    pack.apply_config(&settings.config)?;
    let store = crate::store::open(&root).map_err(|e| super::Error::ModelConfig(e.to_string()))?;
    let events = crate::fates::read(&store).map(|r| r.records).unwrap_or_default();
    let stats =
        crate::fates::stats::compute(&events, Some(now.saturating_sub(WINDOW_DAYS * DAY)), now);
    let severity_of = |rule: &str| pack.rule(rule).map(|r| r.severity());
    let shown = |rule: &str| stats.rules.get(rule).map(|r| r.shown).filter(|n| *n > 0);
    let proposals = propose(&settings.dismissed, &severity_of, &shown, now);
    let from = date(now.saturating_sub(WINDOW_DAYS * DAY));
    let dismissals = settings
        .dismissed
        .dismissed()
        .filter(|d| d.time.get(..10).is_some_and(|day| day >= from.as_str()))
        .count();
    let today = date(now);
    let next = merge(&settings.learned, proposals.clone(), &today);
    Ok(Learning { proposals, current: settings.learned, next, today, dismissals })
}

/// Writes `learned` to the repository's `.sift/learned.toml` (whole, atomically); its path.
pub fn write(root: &std::path::Path, learned: &Learned) -> super::Result<std::path::PathBuf> {
    let root = super::repository_root(root)?;
    let path = root.join(LEARNED);
    sift_indexer::store::write_atomic(&path, learned.to_text().as_bytes())
        .map_err(|e| super::Error::ModelConfig(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// `YYYY-MM-DD` of `secs`.
pub fn date(secs: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    sift_runtime::rules::feedback::rfc3339(time)[..10].to_string()
}

fn day_start(day: &str) -> Option<u64> {
    crate::fates::stats::parse_since(day, 0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sift_runtime::rules::feedback::{Dismissal, Record};

    fn dismissals(list: &[(&str, &str, &str)]) -> Feedback {
        let mut f = Feedback::default();
        for (fp, rule, day) in list {
            f.apply(Record::Dismiss(Dismissal {
                fingerprint: (*fp).into(),
                rule: (*rule).into(),
                path: "a.py".into(),
                time: format!("{day}T10:00:00Z"),
                reason: None,
            }));
        }
        f
    }

    const NOW: u64 = 1_796_601_600; // 2026-12-07

    fn five(rule: &str) -> Vec<(String, String, String)> {
        (1..=5)
            .map(|n| (format!("fp{rule}{n}"), rule.to_string(), format!("2026-12-0{n}")))
            .collect()
    }

    fn as_refs(v: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
        v.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect()
    }

    #[test]
    fn five_dismissals_demote_one_step_with_their_evidence() {
        let list = five("py/x");
        let found =
            propose(&dismissals(&as_refs(&list)), &|_| Some(Severity::Warning), &|_| None, NOW);
        assert_eq!(
            found,
            [Demotion {
                rule: "py/x".into(),
                to: Level::Info,
                dismissed: 5,
                since: "2026-12-01".into(),
                last: "2026-12-05".into(),
                expires: "2027-03-05".into(),
            }]
        );
        assert_eq!(
            found[0].evidence(),
            "5 findings dismissed between 2026-12-01 and 2026-12-05; expires 2027-03-05"
        );
    }

    #[test]
    fn thresholds_hold_back_weak_evidence() {
        let list = five("py/x");
        let refs = as_refs(&list);
        // Four are not enough.
        assert!(
            propose(&dismissals(&refs[..4]), &|_| Some(Severity::Error), &|_| None, NOW).is_empty()
        );
        // Shown 11 times here, dismissed 5: under half, so no.
        assert!(
            propose(&dismissals(&refs), &|_| Some(Severity::Error), &|_| Some(11), NOW).is_empty()
        );
        assert_eq!(
            propose(&dismissals(&refs), &|_| Some(Severity::Error), &|_| Some(10), NOW).len(),
            1
        );
        // Dismissals older than the window do not count.
        let old: Vec<_> = refs.iter().map(|(a, b, _)| (*a, *b, "2026-08-01")).collect();
        assert!(propose(&dismissals(&old), &|_| Some(Severity::Error), &|_| None, NOW).is_empty());
        // A rule the review does not run is not demoted.
        assert!(propose(&dismissals(&refs), &|_| None, &|_| None, NOW).is_empty());
        // The same finding dismissed twice counts once (the dismissals are by fingerprint).
        let same: Vec<_> = refs.iter().map(|(_, b, c)| ("fp", *b, *c)).collect();
        assert!(propose(&dismissals(&same), &|_| Some(Severity::Error), &|_| None, NOW).is_empty());
    }

    #[test]
    fn entries_lapse_and_never_get_louder() {
        let d = |rule: &str, to: Level, expires: &str| Demotion {
            rule: rule.into(),
            to,
            dismissed: 5,
            since: "2026-01-01".into(),
            last: "2026-01-02".into(),
            expires: expires.into(),
        };
        let old = Learned {
            demotions: vec![d("a", Level::Off, "2027-01-01"), d("b", Level::Info, "2026-12-01")],
        };
        assert!(old.active("a", "2026-12-07").is_some());
        assert!(old.active("b", "2026-12-07").is_none(), "lapsed");
        let merged = merge(
            &old,
            vec![d("a", Level::Info, "2027-03-01"), d("c", Level::Warning, "2027-03-01")],
            "2026-12-07",
        );
        let rules: Vec<(&str, Level, &str)> =
            merged.demotions.iter().map(|d| (d.rule.as_str(), d.to, d.expires.as_str())).collect();
        assert_eq!(rules, [("a", Level::Off, "2027-03-01"), ("c", Level::Warning, "2027-03-01")]);
        let text = merged.to_text();
        assert!(text.starts_with("# Rules this repository keeps dismissing"));
        assert_eq!(Learned::parse(&text, "x").unwrap(), merged);
        assert!(
            Learned::parse("[[demote]]\nrule = 1\n", ".sift/learned.toml")
                .unwrap_err()
                .starts_with(".sift/learned.toml:")
        );
    }
}
