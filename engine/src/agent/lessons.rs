//! Touch the hot stove once: an agent change the user refuses with a reason becomes a proposed
//! *lesson*, a memory note that cites the code the change would have touched. Accepted (the
//! user's choice, as for every note), it is given to later runs whose task is about that code,
//! like any fresh note (`Session::notes_for`); once the cited code changes, it is stale and no
//! longer given.
//!
//! This module only words the lesson and picks its citations, from the run's task and change:
//! the CLI (`sift feedback reject RUN --reason … [--lesson]`) and the language server
//! (`sift.agent.discard`, whose answer carries the lesson for `sift.memory.add`) turn it into a
//! note through the memory module, the one place notes are made.

use super::Changes;
use crate::memory::{self, Author, Code, Draft, Memory, MemoryError, Note};

/// The most lines one citation of a lesson spans; a larger change cites its first lines.
const MAX_CITED_LINES: usize = 40;

/// The files a lesson cites at most.
const MAX_FILES: usize = 3;

/// A lesson, before its citations are resolved against the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    /// One line: what was refused.
    pub title: String,
    /// The note's text.
    pub text: String,
    /// Citations, as `PATH:LINES` of the code as it is (the change was not written).
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
    Some(Lesson { title, text, cites, scope, origin: format!("lesson: agent run {run} refused") })
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
    fn a_long_change_cites_its_first_lines() {
        let before: String = (0..100).map(|n| format!("v{n} = {n}\n")).collect();
        let after = before.replace("v3 = 3", "v3 = 30").replace("v90 = 90", "v90 = 900");
        let c = changes(&[("big.py", Some(&before), Some(&after))]);
        let lesson = lesson("r", "t", &c, "the constants are right").unwrap();
        assert_eq!(lesson.cites, [format!("big.py:4-{}", 4 + MAX_CITED_LINES - 1)]);
    }
}
