//! Code retention: how much of what an accepted agent run wrote is still there an hour, a day
//! and a week later, and at each later commit.
//!
//! The unit is a **statement**: the innermost tree-sitter nodes that are statements,
//! declarations, definitions or items (a function without statements inside is one), lying
//! wholly on lines the run wrote; a file without a grammar here counts its non-blank lines. A
//! unit is identified by the hash of its tokens (the grammar's leaves, so whitespace and line
//! breaks do not matter): a statement moved within its file or to another one, or reformatted,
//! is kept; one edited is not. Retention is the share of the run's units (as a multiset) still
//! found in the files it wrote — where they are now: git's renames and the files added since
//! count, so renaming the file keeps its code.
//!
//! On acceptance ([`snapshot`], from `launch::applied`) the units are written to
//! `.sift/fates/retention/<run>.json` (the record of fates' folder: local, never committed).
//! No daemon: whenever sift measures ([`update`], from `sift stats`), each checkpoint that is due
//! and still in its window (1 h until 1 d, 1 d until 7 d, 7 d until 14 d) is measured on the
//! working tree, each commit made since on that commit's tree, and recorded as a fate
//! (`retained`, `count` = percent kept, `reason` = `1h`, `1d`, `7d` or `commit <sha>`). A
//! checkpoint missed (sift did not run in its window) is skipped, never measured late.
//!
//! The first working-tree checkpoint measured also *looks* once ([`look`]): from the snapshot's
//! [`Layout`] (line hashes, no code) it finds the lines that now stand where the run's stood;
//! when they hold the user's own statements and not all of the run's are left, the run is
//! recorded `edited` (`reason` `edited`, or `replaced` below [`REPLACED_BELOW`] percent kept),
//! and a replaced run's lesson is proposed ([`replaced`], `lessons::proposed`) for 14 days.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sift_indexer::Language;

use super::Changes;
use crate::fates::{Event, Fate, Kind, Recorder};

/// The checkpoints after acceptance: label, when it is due, until when it may be measured.
pub const CHECKPOINTS: [(&str, u64, u64); 3] =
    [("1h", HOUR, DAY), ("1d", DAY, 7 * DAY), ("7d", 7 * DAY, 14 * DAY)];

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

/// Commits measured at most per run (the newest first): a long-lived run's history stops here.
const MAX_COMMITS: usize = 20;

/// What an accepted run wrote, as units, and what has been measured of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The run.
    pub run: String,
    /// When it was accepted (seconds).
    pub at: u64,
    /// `HEAD` when it was accepted (outside git: none, and no commit is measured).
    pub head: Option<String>,
    /// The units it wrote, by file.
    pub files: BTreeMap<String, Vec<String>>,
    /// The checkpoints recorded or skipped, the commits measured, and the first look's
    /// outcome (`look`, then `replaced` when it found the run's code replaced; `lesson
    /// dropped` once the user declined its lesson).
    #[serde(default)]
    pub done: Vec<String>,
    /// Where the run's code sat in each file it changed, without the code (see [`Layout`]);
    /// empty in snapshots older than the first look.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub layout: BTreeMap<String, Layout>,
}

/// Where a run's code sat in one file when it was accepted, holding no code: each line's hash
/// (spacing ignored) and the lines the run wrote, so that a later look can tell which lines now
/// stand where the run's stood; and the units of the code the run replaced, so that putting
/// that code back reads as an undo, not as the user's own version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Each line's hash, in order.
    pub lines: Vec<String>,
    /// The lines the run wrote (1-based, inclusive).
    pub wrote: Vec<(usize, usize)>,
    /// The units of the code the run replaced.
    pub before: Vec<String>,
}

/// The marks of [`Snapshot::done`] the first look leaves: looked once, found replaced, its
/// lesson declined.
const LOOKED: &str = "look";
const REPLACED: &str = "replaced";
const LESSON_DROPPED: &str = "lesson dropped";

impl Snapshot {
    /// Whether `mark` is among [`Snapshot::done`].
    fn marked(&self, mark: &str) -> bool {
        self.done.iter().any(|d| d == mark)
    }

    /// How many units it wrote.
    pub fn total(&self) -> usize {
        self.files.values().map(Vec::len).sum()
    }
}

/// The units of `text` (of `path`) on `lines` (1-based; all lines when `None`).
pub fn units(path: &str, text: &str, lines: Option<&[RangeInclusive<usize>]>) -> Vec<String> {
    let within = |start: usize, end: usize| {
        lines.is_none_or(|ranges| ranges.iter().any(|r| *r.start() <= start && end <= *r.end()))
    };
    let Some(language) = Language::from_path(Path::new(path)) else {
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .filter(|(n, _)| within(n + 1, n + 1))
            .map(|(_, l)| hash(&l.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect();
    };
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&language.grammar()).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else { return Vec::new() };
    let mut out = Vec::new();
    collect(tree.root_node(), text.as_bytes(), &within, &mut out);
    out
}

/// Whether a node of kind `kind` is a unit, when no unit lies inside it.
fn is_statement(kind: &str) -> bool {
    ["statement", "declaration", "definition", "item", "declarator"]
        .iter()
        .any(|s| kind.ends_with(s) || kind.ends_with(&format!("{s}s")))
        && !kind.ends_with("_list")
}

/// Collects the innermost statements under `node`; returns whether it found any.
fn collect(
    node: tree_sitter::Node<'_>,
    source: &[u8],
    within: &dyn Fn(usize, usize) -> bool,
    out: &mut Vec<String>,
) -> bool {
    let mut found = false;
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        found |= collect(child, source, within, out);
    }
    if found || !node.is_named() || !is_statement(node.kind()) {
        return found;
    }
    let (start, end) = (node.start_position().row + 1, node.end_position().row + 1);
    if within(start, end) {
        out.push(hash(&tokens(node, source)));
    }
    true
}

/// The node's leaf tokens, separated by one space.
fn tokens(node: tree_sitter::Node<'_>, source: &[u8]) -> String {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.child_count() == 0 {
            out.push(String::from_utf8_lossy(&source[n.byte_range()]).into_owned());
        } else {
            let mut cursor = n.walk();
            let children: Vec<_> = n.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
    }
    out.join(" ")
}

fn hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex()[..16].to_owned()
}

/// A line's hash for [`Layout::lines`]: spacing ignored, 8 hex digits (enough to align a file's
/// lines, not to tell code apart).
fn line_hash(line: &str) -> String {
    let words = line.split_whitespace().collect::<Vec<_>>().join(" ");
    blake3::hash(words.as_bytes()).to_hex()[..8].to_owned()
}

/// How many of `wanted` (a multiset) are in `found`.
pub fn kept(wanted: &[String], found: &[String]) -> usize {
    let mut pool: BTreeMap<&str, usize> = BTreeMap::new();
    for u in found {
        *pool.entry(u.as_str()).or_default() += 1;
    }
    wanted
        .iter()
        .filter(|u| match pool.get_mut(u.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

/// The layout of each file `changes` changed (see [`Layout`]).
pub fn layout(changes: &Changes) -> BTreeMap<String, Layout> {
    let mut files = BTreeMap::new();
    for (path, pending) in changes.iter() {
        let Some(new) = &pending.current else { continue };
        if pending.original.as_ref() == Some(new) {
            continue;
        }
        let wrote = crate::review::changed_lines(pending.original.as_deref(), new, false).ranges();
        let before = match &pending.original {
            Some(old) => {
                let replaced = crate::review::changed_lines(Some(new), old, false).ranges();
                units(path, old, Some(&replaced))
            }
            None => Vec::new(),
        };
        let lines = new.lines().map(line_hash).collect();
        let wrote = wrote.iter().map(|r| (*r.start(), *r.end())).collect();
        files.insert(path.to_owned(), Layout { lines, wrote, before });
    }
    files
}

/// The units `changes` wrote (the lines of each file's new text that differ from its old), from
/// its [`layout`].
pub fn written(
    changes: &Changes,
    layout: &BTreeMap<String, Layout>,
) -> BTreeMap<String, Vec<String>> {
    let mut files = BTreeMap::new();
    for (path, pending) in changes.iter() {
        let (Some(new), Some(layout)) = (&pending.current, layout.get(path)) else { continue };
        let lines: Vec<RangeInclusive<usize>> = layout.wrote.iter().map(|&(a, b)| a..=b).collect();
        let units = units(path, new, Some(&lines));
        if !units.is_empty() {
            files.insert(path.to_owned(), units);
        }
    }
    files
}

fn dir(root: &Path) -> Option<PathBuf> {
    let store = crate::store::open(root).ok()?;
    Some(store.path(&crate::fates::FATES_DIR).join("retention"))
}

/// Writes the snapshot of run `id`, accepted now with `changes`, when the record is on; a
/// failure is a warning (retention is not worth failing an accepted change for).
pub fn snapshot(root: &Path, recorder: &Recorder, id: &str, changes: &Changes, now: u64) {
    if !recorder.is_on() {
        return;
    }
    let layout = layout(changes);
    let files = written(changes, &layout);
    if files.is_empty() {
        return;
    }
    let head = crate::review::git::head(root).ok();
    let snapshot = Snapshot { run: id.to_owned(), at: now, head, files, done: Vec::new(), layout };
    if let Err(e) = save(root, &snapshot) {
        tracing::warn!("cannot keep the retention snapshot of {id}: {e}");
    }
}

fn save(root: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    let dir = dir(root).ok_or_else(|| std::io::Error::other("no .sift/ store"))?;
    std::fs::create_dir_all(&dir)?;
    let bytes = serde_json::to_vec(snapshot).map_err(std::io::Error::other)?;
    sift_indexer::store::write_atomic(&dir.join(format!("{}.json", snapshot.run)), &bytes)
        .map_err(std::io::Error::other)
}

/// Every snapshot of the repository at `root`.
pub fn snapshots(root: &Path) -> Vec<Snapshot> {
    let Some(dir) = dir(root) else { return Vec::new() };
    let mut out: Vec<Snapshot> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by_key(|s| s.at);
    out
}

/// Where the code of a snapshot's files may be now, and how to read it: the files themselves,
/// those git says they were renamed to, and the files added since (code moved out).
struct Where<'a> {
    root: &'a Path,
    /// The commit to read from; `None`: the working tree.
    commit: Option<&'a str>,
}

impl Where<'_> {
    fn text(&self, path: &str) -> Option<String> {
        match self.commit {
            None => std::fs::read_to_string(self.root.join(path)).ok(),
            Some(commit) => {
                crate::review::git::git(self.root, &["show", &format!("{commit}:{path}")])
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            }
        }
    }

    /// The files to look in, from the snapshot's `head`.
    fn candidates(&self, snapshot: &Snapshot) -> Vec<String> {
        let mut out: Vec<String> = snapshot.files.keys().cloned().collect();
        if let Some(head) = &snapshot.head {
            let mut args = vec!["diff", "--name-status", "-M", "--no-color", head.as_str()];
            if let Some(commit) = self.commit {
                args.push(commit);
            }
            if let Ok(bytes) = crate::review::git::git(self.root, &args) {
                for line in String::from_utf8_lossy(&bytes).lines() {
                    let fields: Vec<&str> = line.split('\t').collect();
                    match fields.as_slice() {
                        [status, _, new] if status.starts_with('R') || status.starts_with('C') => {
                            out.push((*new).to_owned());
                        }
                        [status, path] if status.starts_with('A') => out.push((*path).to_owned()),
                        _ => {}
                    }
                }
            }
            if self.commit.is_none() {
                let untracked = crate::review::git::git(
                    self.root,
                    &["ls-files", "--others", "--exclude-standard"],
                );
                if let Ok(bytes) = untracked {
                    out.extend(String::from_utf8_lossy(&bytes).lines().map(str::to_owned));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The percent of `snapshot`'s units found here.
    fn percent(&self, snapshot: &Snapshot) -> u64 {
        let found: Vec<String> = self
            .candidates(snapshot)
            .iter()
            .filter_map(|path| self.text(path).map(|text| units(path, &text, None)))
            .flatten()
            .collect();
        let wanted: Vec<String> = snapshot.files.values().flatten().cloned().collect();
        let total = wanted.len().max(1);
        (kept(&wanted, &found) * 100 / total) as u64
    }
}

/// Below this percent kept, a run whose code the user rewrote counts as *replaced* (its lesson
/// is proposed), at or above as *edited*.
pub const REPLACED_BELOW: u64 = 50;

/// What a look at a run's code in the working tree found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    /// The percent of the run's units still there.
    pub percent: u64,
    /// The user's own code where the run's stood: `(path, first line, last line)` now.
    pub user: Vec<(String, usize, usize)>,
}

impl Look {
    /// What the user made of the run: `None` when its code is all there, or nothing of the
    /// user's stands in its place (deleted, moved away, or the old code put back); else
    /// `replaced` (less than [`REPLACED_BELOW`] percent kept) or `edited`.
    pub fn verdict(&self) -> Option<&'static str> {
        if self.percent >= 100 || self.user.is_empty() {
            None
        } else if self.percent < REPLACED_BELOW {
            Some(REPLACED)
        } else {
            Some("edited")
        }
    }
}

/// Looks at `snapshot`'s files in the working tree (`percent`: its units kept, measured
/// already): the lines that now stand where the run's stood and hold code (units) that is
/// neither the run's nor the code it replaced.
pub fn look(root: &Path, snapshot: &Snapshot, percent: u64) -> Look {
    let mut user = Vec::new();
    for (path, layout) in &snapshot.layout {
        let Ok(text) = std::fs::read_to_string(root.join(path)) else { continue };
        let spans = in_place(layout, &text);
        let ranges: Vec<RangeInclusive<usize>> = spans.iter().map(|(a, b)| *a..=*b).collect();
        let theirs = units(path, &text, Some(&ranges));
        let undone = kept(&theirs, &layout.before) == theirs.len();
        if theirs.is_empty() || undone {
            continue;
        }
        user.extend(spans.into_iter().map(|(a, b)| (path.clone(), a, b)));
    }
    Look { percent, user }
}

/// The lines of `text` (1-based spans, blank ends trimmed) that a line diff from the layout's
/// lines puts where the run's lines were: what replaced them, and what was inserted between
/// them.
fn in_place(layout: &Layout, text: &str) -> Vec<(usize, usize)> {
    let now: Vec<String> = text.lines().map(line_hash).collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &layout.lines, &now);
    let overlaps = |a: usize, b: usize| layout.wrote.iter().any(|&(s, e)| a <= e && s <= b);
    let between = |i: usize| layout.wrote.iter().any(|&(s, e)| s <= i && i < e);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for op in ops {
        let (start, len) = match op {
            similar::DiffOp::Replace { old_index, old_len, new_index, new_len }
                if overlaps(old_index + 1, old_index + old_len) =>
            {
                (new_index, new_len)
            }
            similar::DiffOp::Insert { old_index, new_index, new_len } if between(old_index) => {
                (new_index, new_len)
            }
            _ => continue,
        };
        let blank = |n: &usize| lines.get(*n).is_none_or(|l| l.trim().is_empty());
        let mut span = start..start + len;
        while !span.is_empty() && blank(&span.start) {
            span.start += 1;
        }
        while !span.is_empty() && blank(&(span.end - 1)) {
            span.end -= 1;
        }
        if !span.is_empty() {
            out.push((span.start + 1, span.end));
        }
    }
    out
}

/// The runs whose first look found their code replaced by the user's (see [`Look`]), accepted
/// less than 14 days before `now` and whose lesson the user did not decline, each looked at
/// again now (the user's lines may have moved); those no longer replaced are left out.
pub fn replaced(root: &Path, now: u64) -> Vec<(Snapshot, Look)> {
    let window = CHECKPOINTS[CHECKPOINTS.len() - 1].2;
    snapshots(root)
        .into_iter()
        .filter(|s| now < s.at + window)
        .filter(|s| s.marked(REPLACED) && !s.marked(LESSON_DROPPED))
        .filter_map(|s| {
            let look = look(root, &s, 0);
            (!look.user.is_empty()).then_some((s, look))
        })
        .collect()
}

/// Declines the lesson proposed for run `run` (see [`replaced`]); `false` when no lesson was
/// proposed for it.
pub fn drop_lesson(root: &Path, run: &str) -> std::io::Result<bool> {
    let Some(mut snapshot) = snapshots(root).into_iter().find(|s| s.run == run) else {
        return Ok(false);
    };
    if !snapshot.marked(REPLACED) {
        return Ok(false);
    }
    if !snapshot.marked(LESSON_DROPPED) {
        snapshot.done.push(LESSON_DROPPED.to_owned());
        save(root, &snapshot)?;
    }
    Ok(true)
}

/// Measures what is due of every snapshot on the day `now` and records it (see the module
/// doc); returns the records made.
pub fn update(root: &Path, recorder: &Recorder, now: u64) -> Vec<Event> {
    let mut made = Vec::new();
    for mut snapshot in snapshots(root) {
        let before = snapshot.done.len();
        let here = Where { root, commit: None };
        for (label, due, until) in CHECKPOINTS {
            if snapshot.done.iter().any(|d| d == label) || now < snapshot.at + due {
                continue;
            }
            snapshot.done.push(label.to_owned());
            if now < snapshot.at + until {
                let percent = here.percent(&snapshot);
                made.push(retained(&snapshot.run, percent, label));
                if !snapshot.layout.is_empty() && !snapshot.marked(LOOKED) {
                    snapshot.done.push(LOOKED.to_owned());
                    let look = look(root, &snapshot, percent);
                    if let Some(verdict) = look.verdict() {
                        made.push(
                            Event::new(Kind::AgentRun, &snapshot.run, Fate::Edited)
                                .count(percent as usize)
                                .reason(Some(verdict))
                                .path(look.user[0].0.clone()),
                        );
                        if verdict == REPLACED {
                            snapshot.done.push(REPLACED.to_owned());
                        }
                    }
                }
            }
        }
        if let Some(head) = snapshot.head.clone() {
            let range = format!("{head}..HEAD");
            let commits = crate::review::git::git(root, &["rev-list", "--reverse", &range])
                .map(|b| String::from_utf8_lossy(&b).lines().map(str::to_owned).collect())
                .unwrap_or_else(|_| Vec::<String>::new());
            for commit in commits.iter().rev().take(MAX_COMMITS).rev() {
                let label = format!("commit {}", &commit[..commit.len().min(12)]);
                if snapshot.done.contains(&label) {
                    continue;
                }
                let percent = Where { root, commit: Some(commit) }.percent(&snapshot);
                made.push(retained(&snapshot.run, percent, &label));
                snapshot.done.push(label);
            }
        }
        if snapshot.done.len() != before
            && let Err(e) = save(root, &snapshot)
        {
            tracing::warn!("cannot update the retention snapshot of {}: {e}", snapshot.run);
        }
    }
    for event in &made {
        recorder.record(event.clone());
    }
    made
}

fn retained(run: &str, percent: u64, label: &str) -> Event {
    Event::new(Kind::AgentRun, run, Fate::Retained).count(percent as usize).reason(Some(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "def area(w, h):\n    a = w * h\n    check(a)\n    return a\n\n\ndef other():\n    return 1\n";

    fn share(written: &[String], now: &str, path: &str) -> usize {
        kept(written, &units(path, now, None)) * 100 / written.len()
    }

    #[test]
    fn statements_survive_moves_and_reformatting_not_edits() {
        let wrote = units("a.py", CODE, Some(&[1..=4]));
        assert_eq!(wrote.len(), 3, "three statements inside area(): {wrote:?}");
        // Moved below other(), and reformatted (spacing, a line break inside a call).
        let moved = "def other():\n    return 1\n\n\ndef area(w,h):\n    a = w*h\n    check(\n        a\n    )\n    return a\n";
        assert_eq!(share(&wrote, moved, "a.py"), 100);
        // One statement of three rewritten, one deleted.
        let edited = "def area(w, h):\n    a = w * h * 2\n    return a\n";
        assert_eq!(share(&wrote, edited, "a.py"), 33);
        // Gone.
        assert_eq!(share(&wrote, "def other():\n    return 1\n", "a.py"), 0);
    }

    #[test]
    fn other_languages_and_plain_text() {
        let rust = "fn f() -> u32 {\n    let x = 1;\n    x + 1\n}\n\nfn g() {}\n";
        let wrote = units("lib.rs", rust, Some(&[6..=6]));
        assert_eq!(wrote.len(), 1, "an empty function is one unit");
        assert_eq!(share(&wrote, "fn   g( ) { }\n", "lib.rs"), 100);
        let md = units("README.md", "# Title\n\nsome   words\n", None);
        assert_eq!(md.len(), 2);
        assert_eq!(kept(&md, &units("README.md", "some words\n# Title\n", None)), 2);
    }

    fn git(root: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.email=t@sift", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A scripted history: the run's code is committed renamed and reformatted (all kept), then
    /// one of its three statements is rewritten (two kept); each checkpoint is measured in its
    /// window only, each commit once.
    #[test]
    fn checkpoints_and_commits_on_a_scripted_history() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let base = "def other():\n    return 1\n";
        git(root, &["init", "-q"]);
        std::fs::write(root.join("calc.py"), base).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        crate::store::open(root).unwrap().ensure().unwrap();
        let wrote = format!("{base}\n\n{}", &CODE[..CODE.find("\n\n\n").unwrap() + 1]);
        std::fs::write(root.join("calc.py"), &wrote).unwrap();
        let mut changes = Changes::new();
        changes.set("calc.py", Some(base.to_owned()), Some(wrote.clone()));
        let recorder = Recorder::open(root, &Default::default(), crate::fates::Front::CLI);
        let t = 1_796_601_600;
        snapshot(root, &recorder, "run1", &changes, t);
        assert_eq!(snapshots(root)[0].total(), 3);

        // Commit 1: renamed and reformatted.
        git(root, &["mv", "calc.py", "geometry.py"]);
        std::fs::write(
            root.join("geometry.py"),
            wrote.replace("w * h", "w*h").replace("check(a)", "check(\n        a\n    )"),
        )
        .unwrap();
        git(root, &["commit", "-q", "-am", "rename, reformat"]);
        // Commit 2: one statement rewritten.
        let now = std::fs::read_to_string(root.join("geometry.py")).unwrap();
        std::fs::write(root.join("geometry.py"), now.replace("w*h", "w * h * 2")).unwrap();
        git(root, &["commit", "-q", "-am", "double it"]);

        let got = |events: Vec<Event>| -> Vec<(String, u64)> {
            events.iter().map(|e| (e.reason.clone().unwrap(), e.count.unwrap())).collect()
        };
        let first = got(update(root, &recorder, t + 2 * HOUR));
        assert_eq!(first.len(), 3, "{first:?}");
        assert_eq!(first[0], ("1h".to_owned(), 66));
        assert!(first[1].0.starts_with("commit ") && first[1].1 == 100, "{first:?}");
        assert!(first[2].0.starts_with("commit ") && first[2].1 == 66, "{first:?}");
        assert!(update(root, &recorder, t + 3 * HOUR).is_empty(), "each checkpoint once");
        assert_eq!(got(update(root, &recorder, t + 3 * DAY)), [("1d".to_owned(), 66)]);
        // The 7-day checkpoint's window has passed: skipped, not measured late.
        assert!(update(root, &recorder, t + 20 * DAY).is_empty());
        assert!(snapshots(root)[0].done.contains(&"7d".to_owned()));
    }

    /// The first look, on four fates of one accepted change (three statements written into
    /// `area`): the user rewrote most of it (replaced), one statement of three (edited), put
    /// the old code back (an undo: neither), or kept it whole but reformatted (neither).
    #[test]
    fn the_first_look_tells_replaced_from_edited_from_undone() {
        let old = "def area(w, h):\n    return w * h\n\n\ndef other():\n    return 1\n";
        let new = "def area(w, h):\n    a = w * h\n    check(a)\n    return a\n\n\ndef other():\n    return 1\n";
        let cases = [
            (
                "def area(w, h):\n    # the caller checks\n    s = w * h\n    return s\n\n\ndef other():\n    return 1\n",
                Some("replaced"),
                vec![(2, 4)],
            ),
            (
                "def area(w, h):\n    a = w * h\n    check(a, strict=True)\n    return a\n\n\ndef other():\n    return 1\n",
                Some("edited"),
                vec![(3, 3)],
            ),
            (old, None, vec![]),
            (
                "def area(w,h):\n    a = w*h\n    check(a)\n    return a\n\n\ndef other():\n    return 1\n",
                None,
                vec![],
            ),
        ];
        for (now, verdict, spans) in cases {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            crate::store::open(root).unwrap().ensure().unwrap();
            let mut changes = Changes::new();
            changes.set("calc.py", Some(old.to_owned()), Some(new.to_owned()));
            let recorder = Recorder::open(root, &Default::default(), crate::fates::Front::CLI);
            let t = 1_796_601_600;
            snapshot(root, &recorder, "run1", &changes, t);
            std::fs::write(root.join("calc.py"), now).unwrap();
            let made = update(root, &recorder, t + 2 * HOUR);
            let edited: Vec<_> = made.iter().filter(|e| e.fate == Fate::Edited).collect();
            assert_eq!(edited.first().and_then(|e| e.reason.as_deref()), verdict, "{now}");
            let look = look(root, &snapshots(root)[0], 0);
            if verdict.is_some() {
                let got: Vec<_> = look.user.iter().map(|(_, a, b)| (*a, *b)).collect();
                assert_eq!(got, spans, "{now}");
                assert_eq!(edited[0].path.as_deref(), Some("calc.py"));
            }
            let proposals = replaced(root, t + 3 * HOUR);
            assert_eq!(proposals.len(), usize::from(verdict == Some("replaced")), "{now}");
            assert!(update(root, &recorder, t + 3 * HOUR).is_empty(), "one look only");
            if verdict == Some("replaced") {
                assert!(replaced(root, t + 15 * DAY).is_empty(), "proposed for 14 days");
                assert!(drop_lesson(root, "run1").unwrap());
                assert!(replaced(root, t + 3 * HOUR).is_empty(), "declined");
            } else {
                assert!(!drop_lesson(root, "run1").unwrap(), "nothing proposed to decline");
            }
        }
    }

    #[test]
    fn a_repeated_statement_counts_as_often_as_it_was_written() {
        let twice = "x = 1\nx = 1\n";
        let wrote = units("a.py", twice, None);
        assert_eq!(wrote.len(), 2);
        assert_eq!(share(&wrote, "x = 1\n", "a.py"), 50);
    }
}
