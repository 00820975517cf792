//! What the record of fates says, summed over a period: the figures `sift stats` prints (and
//! that an editor's view can ask for as the same JSON).
//!
//! Every figure counts suggestions, not records: a run shown twice (continued with `--resume`)
//! is one run, and its fate is the last decision recorded for it (taken, taken after an edit,
//! refused); a run shown and never decided is *undecided*. A finding's fate is counted once per
//! fingerprint and fate.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::{Event, Fate, Kind};

/// Seconds in a day.
pub const DAY: u64 = 86_400;

/// The figures of one period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// The first second counted (none: the whole record).
    pub since: Option<u64>,
    /// The last second counted.
    pub until: u64,
    /// Records in the period.
    pub events: usize,
    /// Agent runs.
    pub agent: Decisions,
    /// Agent runs by model.
    pub models: BTreeMap<String, Decisions>,
    /// Best-of-N attempts shown, and those the user took.
    pub attempts: Attempts,
    /// Review findings by rule.
    pub rules: BTreeMap<String, RuleFates>,
    /// Search result lists shown, by front end.
    pub searches: BTreeMap<String, usize>,
    /// Memory notes the agent proposed.
    pub notes: Decisions,
    /// What automations delivered, by job (suggestions and patches).
    pub automations: BTreeMap<String, Decisions>,
    /// Records per day, oldest first (for sparklines), from the period's first day.
    pub daily: Vec<usize>,
    /// Retention of accepted agent code, by checkpoint (`1h`, `1d`, `7d`, and `commit`: each
    /// run's latest commit measured).
    pub retention: BTreeMap<String, Retention>,
}

/// How much accepted agent code was still there at one checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Retention {
    /// Runs measured.
    pub runs: usize,
    /// Their mean percent kept.
    pub mean_percent: f64,
}

/// What became of a kind of suggestion.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Decisions {
    /// Shown to the user.
    pub shown: usize,
    /// Taken as proposed.
    pub accepted: usize,
    /// Taken after the user changed them.
    pub edited: usize,
    /// Refused.
    pub rejected: usize,
    /// Shown and not decided (yet).
    pub undecided: usize,
    /// Taken (as proposed or edited) of those shown; none when nothing was shown.
    pub acceptance: Option<f64>,
}

/// Best-of-N attempts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attempts {
    /// Attempts shown.
    pub shown: usize,
    /// Attempts taken.
    pub taken: usize,
}

/// What became of one rule's findings (distinct fingerprints).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleFates {
    /// Findings shown.
    pub shown: usize,
    /// Dismissed as wrong.
    pub dismissed_wrong: usize,
    /// Dismissed as not worth raising.
    pub dismissed_noise: usize,
    /// Dismissals taken back.
    pub forgotten: usize,
    /// Files the rule was silenced in.
    pub silenced: usize,
    /// Fixed by the user.
    pub fixed: usize,
    /// Merged with the flagged code untouched.
    pub ignored: usize,
    /// Fixed of those fixed or merged untouched (the resolution rate); none when neither.
    pub resolution: Option<f64>,
}

/// Sums `events` between `since` (none: from the first) and `until`.
pub fn compute(events: &[Event], since: Option<u64>, until: u64) -> Stats {
    let period: Vec<&Event> =
        events.iter().filter(|e| since.is_none_or(|s| e.at >= s) && e.at <= until).collect();
    let mut stats = Stats { since, until, events: period.len(), ..Stats::default() };

    // Runs and notes: their model, whether shown, and their last decision.
    let mut runs: HashMap<&str, (Option<&str>, bool, Option<Fate>)> = HashMap::new();
    let mut notes: HashMap<&str, (bool, Option<Fate>)> = HashMap::new();
    let mut delivered: HashMap<&str, (&str, bool, Option<Fate>)> = HashMap::new();
    let mut attempts: BTreeSet<(&str, Fate)> = BTreeSet::new();
    let mut findings: BTreeSet<(&str, &str, Fate)> = BTreeSet::new();
    let mut finding_rule: HashMap<&str, &str> = HashMap::new();
    let mut kept: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for e in &period {
        match e.kind {
            Kind::AgentRun => {
                let run = runs.entry(&e.id).or_default();
                if run.0.is_none() {
                    run.0 = e.model.as_deref();
                }
                match e.fate {
                    Fate::Shown => run.1 = true,
                    Fate::Accepted | Fate::Edited | Fate::Rejected => run.2 = Some(e.fate),
                    Fate::Retained => {
                        let label = match e.reason.as_deref() {
                            Some(r) if r.starts_with("commit ") => "commit",
                            Some(r) => r,
                            None => continue,
                        };
                        // A later record of the same checkpoint (a later commit) replaces it.
                        kept.insert((e.id.as_str(), label), e.count.unwrap_or(0));
                    }
                    _ => {}
                }
            }
            Kind::Note => {
                let note = notes.entry(&e.id).or_default();
                match e.fate {
                    Fate::Shown => note.0 = true,
                    Fate::Accepted | Fate::Edited | Fate::Rejected | Fate::Expired => {
                        note.1 = Some(e.fate)
                    }
                    _ => {}
                }
            }
            Kind::Attempt => {
                attempts.insert((&e.id, e.fate));
            }
            Kind::Finding => {
                if let Some(rule) = e.rule.as_deref() {
                    finding_rule.insert(&e.id, rule);
                }
                // A forget names no rule: it is the fingerprint's.
                let rule = e.rule.as_deref().or_else(|| finding_rule.get(e.id.as_str()).copied());
                if let Some(rule) = rule {
                    findings.insert((rule, &e.id, e.fate));
                }
            }
            Kind::Search => *stats.searches.entry(e.front.clone()).or_default() += 1,
            Kind::Automation => {
                let job = e.rule.as_deref().unwrap_or("unknown");
                let change = delivered.entry(&e.id).or_insert((job, false, None));
                match e.fate {
                    Fate::Shown => change.1 = true,
                    Fate::Accepted | Fate::Edited | Fate::Rejected => change.2 = Some(e.fate),
                    _ => {}
                }
            }
        }
    }
    for (model, shown, decision) in runs.values() {
        // A run decided without being shown in the period was shown before it: count it.
        if !shown && decision.is_none() {
            continue;
        }
        let model = model.unwrap_or("unknown").to_owned();
        for d in [&mut stats.agent, stats.models.entry(model).or_default()] {
            tally(d, *decision);
        }
    }
    for (shown, decision) in notes.values() {
        if *shown || decision.is_some() {
            tally(&mut stats.notes, decision.filter(|d| *d != Fate::Expired));
        }
    }
    for (job, shown, decision) in delivered.values() {
        if *shown || decision.is_some() {
            tally(stats.automations.entry((*job).to_owned()).or_default(), *decision);
        }
    }
    for d in std::iter::once(&mut stats.agent)
        .chain(stats.models.values_mut())
        .chain(std::iter::once(&mut stats.notes))
        .chain(stats.automations.values_mut())
    {
        d.acceptance = (d.shown > 0).then(|| (d.accepted + d.edited) as f64 / d.shown as f64);
    }
    for ((_, label), percent) in &kept {
        let r = stats.retention.entry((*label).to_owned()).or_default();
        r.mean_percent = (r.mean_percent * r.runs as f64 + *percent as f64) / (r.runs + 1) as f64;
        r.runs += 1;
    }
    stats.attempts.shown = attempts.iter().filter(|(_, f)| *f == Fate::Shown).count();
    stats.attempts.taken = attempts.iter().filter(|(_, f)| *f == Fate::Accepted).count();
    for (rule, _, fate) in findings {
        let r = stats.rules.entry(rule.to_owned()).or_default();
        match fate {
            Fate::Shown => r.shown += 1,
            Fate::DismissedWrong => r.dismissed_wrong += 1,
            Fate::DismissedNoise => r.dismissed_noise += 1,
            Fate::Forgotten => r.forgotten += 1,
            Fate::Silenced => r.silenced += 1,
            Fate::Fixed => r.fixed += 1,
            Fate::Ignored => r.ignored += 1,
            _ => {}
        }
    }
    for r in stats.rules.values_mut() {
        let decided = r.fixed + r.ignored;
        r.resolution = (decided > 0).then(|| r.fixed as f64 / decided as f64);
    }
    let first = since.or_else(|| period.iter().map(|e| e.at).min()).unwrap_or(until);
    let days = ((until.saturating_sub(first)) / DAY + 1) as usize;
    stats.daily = vec![0; days.min(3660)];
    for e in &period {
        let day = ((e.at.saturating_sub(first)) / DAY) as usize;
        if let Some(slot) = stats.daily.get_mut(day) {
            *slot += 1;
        }
    }
    stats
}

fn tally(d: &mut Decisions, decision: Option<Fate>) {
    d.shown += 1;
    match decision {
        Some(Fate::Accepted) => d.accepted += 1,
        Some(Fate::Edited) => d.edited += 1,
        Some(Fate::Rejected) => d.rejected += 1,
        _ => d.undecided += 1,
    }
}

/// A line of block characters, one per value, scaled to the largest (`▁` for zero).
pub fn sparkline(values: &[usize]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().max().unwrap_or(0);
    values
        .iter()
        .map(|&v| if max == 0 || v == 0 { BARS[0] } else { BARS[(v * 7).div_ceil(max).min(7)] })
        .collect()
}

/// A period as typed by the user: `7d`, `24h`, `30m`, `2w`, or a date `YYYY-MM-DD` (UTC);
/// the first second it covers, counted back from `now`.
pub fn parse_since(text: &str, now: u64) -> Result<u64, String> {
    let text = text.trim();
    let bad =
        || format!("--since {text:?}: use a span such as 7d, 24h, 30m, 2w, or a date YYYY-MM-DD");
    if let Some((y, rest)) = text.split_once('-') {
        let (m, d) = rest.split_once('-').ok_or_else(bad)?;
        let (y, m, d): (i64, i64, i64) = (
            y.parse().map_err(|_| bad())?,
            m.parse().map_err(|_| bad())?,
            d.parse().map_err(|_| bad())?,
        );
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) || y < 1970 {
            return Err(bad());
        }
        // Howard Hinnant's days_from_civil.
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        return Ok((days.max(0) as u64) * DAY);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = text.split_at(split);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit {
        "m" => 60,
        "h" => 3600,
        "d" => DAY,
        "w" => 7 * DAY,
        _ => return Err(bad()),
    };
    Ok(now.saturating_sub(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(kind: Kind, id: &str, fate: Fate, at: u64) -> Event {
        Event { at, front: "cli".into(), ..Event::new(kind, id, fate) }
    }

    #[test]
    fn runs_count_once_with_their_last_decision() {
        let events = vec![
            at(Kind::AgentRun, "r1", Fate::Shown, 10).model("m1"),
            at(Kind::AgentRun, "r1", Fate::Shown, 11).model("m1"), // resumed
            at(Kind::AgentRun, "r1", Fate::Accepted, 12),
            at(Kind::AgentRun, "r2", Fate::Shown, 20).model("m1"),
            at(Kind::AgentRun, "r2", Fate::Rejected, 21).reason(Some("wrong file")),
            at(Kind::AgentRun, "r3", Fate::Shown, 30).model("m2"),
            at(Kind::Attempt, "r3#0", Fate::Shown, 30),
            at(Kind::Attempt, "r3#1", Fate::Shown, 30),
            at(Kind::Attempt, "r3#1", Fate::Accepted, 31),
            at(Kind::Search, "q", Fate::Shown, 40),
        ];
        let s = compute(&events, None, 100);
        assert_eq!(s.events, events.len());
        assert_eq!(
            (s.agent.shown, s.agent.accepted, s.agent.rejected, s.agent.undecided),
            (3, 1, 1, 1)
        );
        assert_eq!(s.agent.acceptance, Some(1.0 / 3.0));
        assert_eq!(s.models["m1"].shown, 2);
        assert_eq!(s.models["m1"].acceptance, Some(0.5));
        assert_eq!(s.models["m2"].undecided, 1);
        assert_eq!(s.attempts, Attempts { shown: 2, taken: 1 });
        assert_eq!(s.searches["cli"], 1);
        // A period that starts after r1 was shown still counts its decision.
        let later = compute(&events, Some(12), 100);
        assert_eq!(later.agent.shown, 3);
        assert_eq!(later.agent.accepted, 1);
        assert_eq!(compute(&events, Some(35), 100).agent.shown, 0);
    }

    #[test]
    fn retention_is_a_mean_per_checkpoint_and_the_latest_commit() {
        let kept = |run: &str, percent: usize, when: &str, t: u64| {
            at(Kind::AgentRun, run, Fate::Retained, t).count(percent).reason(Some(when))
        };
        let events = vec![
            at(Kind::AgentRun, "r1", Fate::Shown, 1),
            at(Kind::AgentRun, "r1", Fate::Accepted, 2),
            kept("r1", 100, "1h", 3),
            kept("r1", 80, "commit abc", 4),
            kept("r1", 50, "commit def", 5),
            kept("r2", 60, "1h", 6),
        ];
        let s = compute(&events, None, 10);
        assert_eq!(s.retention["1h"], Retention { runs: 2, mean_percent: 80.0 });
        assert_eq!(s.retention["commit"], Retention { runs: 1, mean_percent: 50.0 });
        assert!(!s.retention.contains_key("1d"));
        // Retention records are not decisions: r1 stays taken, r2 (never shown here) uncounted.
        assert_eq!((s.agent.shown, s.agent.accepted), (1, 1));
    }

    #[test]
    fn findings_count_per_rule_and_a_forget_is_its_fingerprints() {
        let events = vec![
            at(Kind::Finding, "f1", Fate::Shown, 1).rule("py/a"),
            at(Kind::Finding, "f1", Fate::Shown, 2).rule("py/a"),
            at(Kind::Finding, "f2", Fate::Shown, 2).rule("py/a"),
            at(Kind::Finding, "f1", Fate::DismissedWrong, 3).rule("py/a"),
            at(Kind::Finding, "f1", Fate::Forgotten, 4),
            at(Kind::Finding, "py/b", Fate::Silenced, 5).rule("py/b").path("x.py"),
        ];
        let s = compute(&events, None, 10);
        let a = &s.rules["py/a"];
        assert_eq!((a.shown, a.dismissed_wrong, a.forgotten), (2, 1, 1));
        assert_eq!(s.rules["py/b"].silenced, 1);
    }

    #[test]
    fn days_and_sparklines() {
        let events = vec![
            at(Kind::Search, "q", Fate::Shown, 0),
            at(Kind::Search, "q", Fate::Shown, DAY + 5),
            at(Kind::Search, "q", Fate::Shown, DAY + 6),
            at(Kind::Search, "q", Fate::Shown, 3 * DAY),
        ];
        let s = compute(&events, None, 3 * DAY + 10);
        assert_eq!(s.daily, [1, 2, 0, 1]);
        assert_eq!(sparkline(&s.daily), "▅█▁▅");
        assert_eq!(sparkline(&[]), "");
        assert_eq!(sparkline(&[0, 0]), "▁▁");
    }

    #[test]
    fn periods_parse_as_spans_or_dates() {
        let now = 1_000_000_000;
        assert_eq!(parse_since("7d", now), Ok(now - 7 * DAY));
        assert_eq!(parse_since("24h", now), Ok(now - DAY));
        assert_eq!(parse_since("2w", now), Ok(now - 14 * DAY));
        assert_eq!(parse_since("2026-12-07", now), Ok(1_796_601_600));
        assert_eq!(parse_since("1970-01-01", now), Ok(0));
        for bad in ["", "7", "7y", "d", "2026-13-01", "yesterday"] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }
}
