//! Touch the hot stove once: an agent change the user refuses with a reason, or accepts and then
//! replaces with their own version of the same code, becomes a proposed *lesson*, a memory note
//! that cites the code concerned: the lines the refused change would have rewritten, or the
//! user's lines that replaced the accepted one. Accepted (the user's choice, as for every note),
//! it is given to later runs whose task is about that code, like any fresh note
//! (`Session::notes_for`); once the cited code changes, it is stale and no longer given.
//!
//! This module only words the lesson and picks its citations: from the run's task and change
//! ([`lesson`]), or from what retention's first look found in the user's code ([`replaced`],
//! [`proposed`]: see `retention::Look`). The CLI (`sift feedback reject RUN --reason …
//! [--lesson]`, `sift feedback lesson RUN`) and the language server (`sift.agent.discard`, and
//! `sift/stats`' `lessons`, whose entries carry `sift.memory.add`'s arguments) turn it into a
//! note through the memory module, the one place notes are made.

use std::path::Path;

use serde::Serialize;

use super::Changes;
use crate::memory::{self, Author, Code, Draft, Memory, MemoryError, Note};

/// The most lines one citation of a lesson spans; a larger change cites its first lines.
const MAX_CITED_LINES: usize = 40;

/// The files a lesson cites at most.
const MAX_FILES: usize = 3;

/// A lesson, before its citations are resolved against the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lesson {
    /// The run it comes from.
    pub run: String,
    /// One line: what was refused.
    pub title: String,
    /// The note's text.
    pub text: String,
    /// Citations, as `PATH:LINES` of the code as it is (`cite` in JSON, as `sift.memory.add`
    /// takes them).
    #[serde(rename = "cite")]
    pub cites: Vec<String>,
    /// The files it is about (the note's scope).
    pub scope: Vec<String>,
    /// Where it came from, for the note's `origin`.
    pub origin: String,
}

/// The lesson of run `run` (asked `task`, proposing `changes`) refused for `reason`; `None`
/// without a reason (there is nothing to learn) or when the change edits no existing file
/// (there is no code to cite, so nothing could ever make the lesson stale).
pub fn lesson(run: &str, task: &str, changes: &Changes, reason: &str) -> Option<Lesson> {
    let reason = reason.trim();
    if reason.is_empty() {
        return None;
    }
    let mut cites = Vec::new();
    let mut scope = Vec::new();
    for (path, pending) in changes.iter() {
        let (Some(before), Some(after)) = (&pending.original, &pending.current) else { continue };
        if before == after {
            continue;
        }
        // The lines of the code as it is (the change was refused) that the change rewrote.
        let lines = crate::review::changed_lines(Some(after), before, true);
        let Some((start, end)) = span(&lines.ranges(), before.lines().count()) else { continue };
        cites.push(format!("{path}:{start}-{end}"));
        scope.push(path.to_owned());
        if cites.len() == MAX_FILES {
            break;
        }
    }
    if cites.is_empty() {
        return None;
    }
    let first = reason.lines().next().unwrap_or(reason);
    let title = format!("Refused: {}", shorten(first, 70));
    let asked = shorten(task.lines().next().unwrap_or(task), 120);
    let files = scope.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
    let text = format!(
        "An agent change to {files} (asked: \"{asked}\") was refused: {reason}\n\nDo not make that change again unless someone asks for it explicitly."
    );
    let origin = format!("lesson: agent run {run} refused");
    Some(Lesson { run: run.to_owned(), title, text, cites, scope, origin })
}

/// The lesson of run `run` (asked `task`), accepted and then replaced by the user's own code at
/// `user` (`(path, first line, last line)` now, as `retention::Look` found it): it cites the
/// user's lines, so it goes stale when they change. `None` when `user` is empty.
pub fn replaced(run: &str, task: &str, user: &[(String, usize, usize)]) -> Option<Lesson> {
    let mut cites = Vec::new();
    let mut scope: Vec<String> = Vec::new();
    for (path, ..) in user {
        if scope.last() == Some(path) {
            continue;
        }
        if scope.len() == MAX_FILES {
            break;
        }
        let ranges: Vec<_> =
            user.iter().filter(|(p, ..)| p == path).map(|&(_, a, b)| a..=b).collect();
        let Some((start, end)) = span(&ranges, usize::MAX) else { continue };
        cites.push(format!("{path}:{start}-{end}"));
        scope.push(path.clone());
    }
    let first = scope.first()?;
    let title = format!("Replaced: the agent's change to {}", shorten(first, 60));
    let files = scope.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
    let asked = task.lines().next().map(str::trim).filter(|t| !t.is_empty());
    let asked = asked.map(|t| format!(" (asked: \"{}\")", shorten(t, 120))).unwrap_or_default();
    let text = format!(
        "An agent change to {files}{asked} was accepted, then replaced by the user's own version of the same code: the lines this note cites.\n\nFollow that version when changing this code; do not bring the agent's version back unless someone asks for it explicitly."
    );
    Some(Lesson { run: run.to_owned(), title, text, cites, scope, origin: replaced_origin(run) })
}

/// The origin of run `run`'s lesson from code the user replaced, as its note keeps it.
fn replaced_origin(run: &str) -> String {
    format!("lesson: agent run {run} replaced")
}

/// The lessons proposed for the repository at `root` on the day `now`: one per run whose code
/// the user replaced (`retention::replaced`), unless a note of `memory` already comes from it
/// (the user kept it). The task is read from the run's transcript.
pub fn proposed(root: &Path, memory: &Memory, now: u64) -> Vec<Lesson> {
    let Ok(store) = crate::store::open(root) else { return Vec::new() };
    let (notes, _) = memory.load();
    let kept: std::collections::BTreeSet<&str> =
        notes.iter().filter_map(|n| n.front.origin.as_deref()).collect();
    super::retention::replaced(root, now)
        .into_iter()
        .filter(|(snapshot, _)| !kept.contains(replaced_origin(&snapshot.run).as_str()))
        .filter_map(|(snapshot, look)| {
            let task = super::Transcript::open(&store, &snapshot.run)
                .resume()
                .map(|r| r.task)
                .unwrap_or_default();
            replaced(&snapshot.run, &task, &look.user)
        })
        .collect()
}

/// `lesson` as a note of `memory`, its citations resolved against `code`: the user's own note
/// (their reason is its substance), with the lesson's scope and origin. Not written.
pub fn note(memory: &Memory, code: &dyn Code, lesson: &Lesson) -> Result<Note, MemoryError> {
    memory::new_note(
        memory,
        code,
        Draft {
            text: &lesson.text,
            title: Some(&lesson.title),
            cites: &lesson.cites,
            scope: lesson.scope.clone(),
            author: Author::User,
            origin: Some(lesson.origin.clone()),
        },
    )
}

/// The first changed lines as one span of at most [`MAX_CITED_LINES`], within `total` lines.
fn span(ranges: &[std::ops::RangeInclusive<usize>], total: usize) -> Option<(usize, usize)> {
    let start = *ranges.first()?.start();
    let end = ranges.iter().map(|r| *r.end()).max()?.min(start + MAX_CITED_LINES - 1);
    let end = end.min(total.max(1));
    (start <= end).then_some((start, end))
}

fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(files: &[(&str, Option<&str>, Option<&str>)]) -> Changes {
        let mut c = Changes::new();
        for (path, before, after) in files {
            c.set(path, before.map(str::to_owned), after.map(str::to_owned));
        }
        c
    }

    #[test]
    fn a_refusal_with_a_reason_cites_the_lines_the_change_rewrote() {
        let before = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
        let after = "def add(a, b):\n    print('adding')\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
        let c =
            changes(&[("calc.py", Some(before), Some(after)), ("new.py", None, Some("x = 1\n"))]);
        let lesson =
            lesson("r1", "log every call of add", &c, "keep add() pure: no printing").unwrap();
        assert_eq!(lesson.cites, ["calc.py:2-2"]);
        assert_eq!(lesson.scope, ["calc.py"]);
        assert_eq!(lesson.title, "Refused: keep add() pure: no printing");
        assert!(lesson.text.contains("`calc.py`") && lesson.text.contains("keep add() pure"));
        assert!(lesson.text.contains("log every call of add"));
        assert!(crate::memory::task_talk(&lesson.text).is_none(), "{}", lesson.text);
        assert_eq!(lesson.origin, "lesson: agent run r1 refused");
    }

    #[test]
    fn no_reason_or_no_existing_code_teaches_nothing() {
        let c = changes(&[("calc.py", Some("a\n"), Some("b\n"))]);
        assert!(lesson("r", "t", &c, "  ").is_none());
        let created = changes(&[("new.py", None, Some("x = 1\n"))]);
        assert!(lesson("r", "t", &created, "no new files").is_none());
    }

    #[test]
    fn a_replaced_change_cites_the_users_lines_per_file() {
        let user =
            [("a.py".to_owned(), 3, 5), ("a.py".to_owned(), 9, 9), ("b.py".to_owned(), 1, 200)];
        let lesson = replaced("r2", "cache the totals\nmore", &user).unwrap();
        assert_eq!(lesson.cites, ["a.py:3-9", format!("b.py:1-{MAX_CITED_LINES}").as_str()]);
        assert_eq!(lesson.scope, ["a.py", "b.py"]);
        assert_eq!(lesson.origin, "lesson: agent run r2 replaced");
        assert!(lesson.text.contains("(asked: \"cache the totals\")"), "{}", lesson.text);
        assert!(crate::memory::task_talk(&lesson.text).is_none(), "{}", lesson.text);
        assert!(!replaced("r2", "", &user).unwrap().text.contains("asked"));
        assert!(replaced("r2", "t", &[]).is_none());
    }

    /// The files of a folder as they are on disk.
    struct Disk<'a>(&'a Path);

    impl Code for Disk<'_> {
        fn relative(&self, path: &str) -> Result<String, String> {
            Ok(path.to_owned())
        }
        fn text(&self, rel: &str) -> Option<String> {
            std::fs::read_to_string(self.0.join(rel)).ok()
        }
        fn version(&self, _: &str) -> Option<String> {
            None
        }
        fn generation(&self) -> String {
            String::new()
        }
        fn defining(&self, _: &str) -> Vec<String> {
            Vec::new()
        }
    }

    /// A run accepted, then replaced by the user's code: its lesson is proposed until a note
    /// comes from it (kept through the memory module, as every front end keeps it).
    #[test]
    fn a_replaced_run_is_proposed_until_its_lesson_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let store = crate::store::open(root).unwrap();
        store.ensure().unwrap();
        let old = "def total(xs):\n    return sum(xs)\n";
        let new = "def total(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n";
        let mut c = Changes::new();
        c.set("calc.py", Some(old.to_owned()), Some(new.to_owned()));
        let recorder =
            crate::fates::Recorder::open(root, &Default::default(), crate::fates::Front::CLI);
        let t = 1_796_601_600;
        super::super::retention::snapshot(root, &recorder, "run7", &c, t);
        let mine = "def total(xs):\n    return math.fsum(xs)\n";
        std::fs::write(root.join("calc.py"), mine).unwrap();
        super::super::retention::update(root, &recorder, t + 7200);
        let memory = Memory::open(&store);
        let lessons = proposed(root, &memory, t + 7300);
        assert_eq!(lessons.len(), 1, "{lessons:?}");
        assert_eq!(lessons[0].cites, ["calc.py:2-2"]);
        assert_eq!(lessons[0].run, "run7");
        let kept = note(&memory, &Disk(root), &lessons[0]).unwrap();
        memory.write(&kept).unwrap();
        assert!(proposed(root, &memory, t + 7300).is_empty(), "kept: no longer proposed");
    }

    #[test]
    fn a_long_change_cites_its_first_lines() {
        let before: String = (0..100).map(|n| format!("v{n} = {n}\n")).collect();
        let after = before.replace("v3 = 3", "v3 = 30").replace("v90 = 90", "v90 = 900");
        let c = changes(&[("big.py", Some(&before), Some(&after))]);
        let lesson = lesson("r", "t", &c, "the constants are right").unwrap();
        assert_eq!(lesson.cites, [format!("big.py:4-{}", 4 + MAX_CITED_LINES - 1)]);
    }
}
