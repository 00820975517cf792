//! Every note's state against the code: each citation looked up again (symbol first, lines as
//! a hint; a unique symbol is followed to another file), and the note stale, with the reason,
//! when a cited text changed or cannot be found.
//!
//! Incremental: a state remembers the version (the index manifest's content hash) of every file
//! it was computed from, and is computed again only when the note or one of those files
//! changed — or, for a note whose symbol was looked for everywhere and not found, when anything
//! in the index changed. So an index update that touched ten files re-checks the notes citing
//! those ten files, not all of them.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::Path;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use sift_indexer::CodeIndex;
use sift_indexer::manifest::Manifest;
use sift_runtime::sandbox::Policy;

use super::cite::{self, Located};
use super::note::{Citation, Note};

/// The code notes are checked against.
pub trait Code {
    /// A path from the user (relative or absolute) as a workspace-relative one, or why not.
    fn relative(&self, path: &str) -> Result<String, String>;
    /// The current text of a file (`None`: missing, unreadable, not text, or a secret file).
    fn text(&self, rel: &str) -> Option<String>;
    /// A version of the file that changes with its content (`None`: unknown; always re-read).
    fn version(&self, rel: &str) -> Option<String>;
    /// Changes whenever any file may have changed.
    fn generation(&self) -> String;
    /// Files that may define a symbol named `name` (a superset is fine).
    fn defining(&self, name: &str) -> Vec<String>;
    /// The files that may have changed since `generation` (`None`: unknown; every state's files
    /// are compared).
    fn changed_since(&self, generation: &str) -> Option<Vec<String>> {
        let _ = generation;
        None
    }
    /// The definitions of `rel`, whose current text is `text` (by default: parsed now).
    fn definitions(&self, rel: &str, text: &str) -> Vec<cite::Definition> {
        cite::definitions(rel, text)
    }
}

/// Where a citation's code is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Here, with what it hashes to now (equal to the citation's, or not).
    Found {
        /// The file.
        path: String,
        /// First line, 1-based.
        start: usize,
        /// Last line, 1-based, inclusive.
        end: usize,
        /// The hash of the text there now.
        hash: String,
    },
    /// Nowhere: why.
    Lost(String),
}

/// Looks a citation up in the code as it is now (see the module documentation).
pub fn resolve(c: &Citation, code: &dyn Code) -> Resolution {
    resolve_with(c, &Files::new(code)).0
}

/// The files one check reads: each read and parsed at most once, however many citations
/// look at it.
struct Files<'c> {
    code: &'c dyn Code,
    read: RefCell<HashMap<String, Option<Rc<File>>>>,
}

/// One file's text and, once asked for, its definitions.
struct File {
    text: String,
    defs: OnceCell<Vec<cite::Definition>>,
}

impl<'c> Files<'c> {
    fn new(code: &'c dyn Code) -> Files<'c> {
        Files { code, read: RefCell::new(HashMap::new()) }
    }

    fn get(&self, rel: &str) -> Option<Rc<File>> {
        if let Some(seen) = self.read.borrow().get(rel) {
            return seen.clone();
        }
        let file = self.code.text(rel).map(|text| Rc::new(File { text, defs: OnceCell::new() }));
        self.read.borrow_mut().insert(rel.to_string(), file.clone());
        file
    }

    /// Where `c`'s text is in `rel` (see [`cite::locate`]).
    fn locate(&self, rel: &str, file: &File, c: &Citation, hint: bool) -> Located {
        let symbol = c.symbol.as_deref();
        let defs: &[cite::Definition] = match symbol {
            Some(_) => file.defs.get_or_init(|| self.code.definitions(rel, &file.text)),
            None => &[],
        };
        let hint = if hint { c.line_range() } else { None };
        cite::locate_among(&file.text, defs, symbol, hint, &c.hash)
    }
}

/// [`resolve`], the files it read, and whether the answer depends on every file (a symbol
/// looked for everywhere).
fn resolve_with(c: &Citation, files: &Files<'_>) -> (Resolution, Vec<String>, bool) {
    let symbol = c.symbol.as_deref();
    let mut deps = vec![c.path.clone()];
    let here = files.get(&c.path);
    let found = |path: &str, located: Located| match located {
        Located::At { start, end, hash } => {
            Some(Resolution::Found { path: path.to_string(), start, end, hash })
        }
        _ => None,
    };
    if let Some(file) = &here {
        match files.locate(&c.path, file, c, true) {
            Located::At { start, end, hash } => {
                return (Resolution::Found { path: c.path.clone(), start, end, hash }, deps, false);
            }
            Located::Ambiguous(spans) => {
                let at: Vec<String> = spans.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                let reason = format!(
                    "{} is defined {} times in {} now (lines {})",
                    symbol.unwrap_or("?"),
                    spans.len(),
                    c.path,
                    at.join(", ")
                );
                return (Resolution::Lost(reason), deps, false);
            }
            Located::LinesGone => {
                let reason =
                    format!("{} no longer has lines {}", c.path, c.lines.as_deref().unwrap_or("?"));
                return (Resolution::Lost(reason), deps, false);
            }
            Located::NoSymbol => {}
        }
    }
    let Some(symbol) = symbol else {
        return (
            Resolution::Lost(format!("{} was deleted or cannot be read", c.path)),
            deps,
            false,
        );
    };
    // The symbol left its file: follow it when exactly one other definition is its, or unique.
    let (_, name) = cite::split_symbol(symbol);
    let mut elsewhere = Vec::new();
    for path in files.code.defining(name) {
        if path == c.path {
            continue;
        }
        let Some(file) = files.get(&path) else { continue };
        if let Some(r) = found(&path, files.locate(&path, &file, c, false)) {
            deps.push(path.clone());
            elsewhere.push(r);
        }
    }
    let same = elsewhere
        .iter()
        .filter(|r| matches!(r, Resolution::Found { hash, .. } if *hash == c.hash))
        .count();
    let gone = if here.is_some() {
        format!("{symbol} is no longer defined in {}", c.path)
    } else {
        format!("{} was deleted and {symbol} is not defined elsewhere", c.path)
    };
    if same == 1 {
        let r = elsewhere
            .into_iter()
            .find(|r| matches!(r, Resolution::Found { hash, .. } if *hash == c.hash));
        return (r.expect("one"), deps, false);
    }
    match elsewhere.len() {
        0 if here.is_some() => {
            (Resolution::Lost(format!("{gone} nor anywhere else in the index")), deps, true)
        }
        0 => (Resolution::Lost(gone), deps, true),
        1 => (elsewhere.pop().expect("one"), deps, false),
        _ => {
            let paths: Vec<String> = elsewhere
                .iter()
                .filter_map(|r| match r {
                    Resolution::Found { path, .. } => Some(path.clone()),
                    Resolution::Lost(_) => None,
                })
                .collect();
            (
                Resolution::Lost(format!("{gone}; it is defined in {}", paths.join(", "))),
                deps,
                false,
            )
        }
    }
}

/// A citation's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The cited text is where the note says.
    Fresh,
    /// The cited text is unchanged but elsewhere (other lines or another file).
    Moved,
    /// The cited code is there, changed.
    Changed,
    /// The cited code cannot be found.
    Lost,
}

/// One citation, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiteState {
    /// `path#symbol` or `path:lines`, as the note has it.
    pub label: String,
    /// Its state.
    pub status: Status,
    /// Where it is now (`path:start-end`), when found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    /// Why it is stale, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A note, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Why the note is stale (the first stale citation's reason); `None`: fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
    /// Each citation, in the note's order.
    pub citations: Vec<CiteState>,
    /// The note's content hash when checked.
    note: String,
    /// The version of each file the state was computed from ("" where unknown).
    deps: BTreeMap<String, String>,
    /// Computed from a look through every file: valid only for this generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wide: Option<String>,
}

impl State {
    /// Whether every citation still holds.
    pub fn is_fresh(&self) -> bool {
        self.stale.is_none()
    }

    /// `fresh`, `moved` (fresh, and a citation's location moved) or `stale`.
    pub fn word(&self) -> &'static str {
        if self.stale.is_some() {
            "stale"
        } else if self.citations.iter().any(|c| c.status == Status::Moved) {
            "moved"
        } else {
            "fresh"
        }
    }
}

/// Every note's state, and the generation they were checked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct States {
    /// The code's generation at the last check.
    pub generation: String,
    /// By slug.
    pub notes: BTreeMap<String, State>,
}

/// What [`check`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    /// Notes checked again.
    pub rechecked: usize,
    /// Notes whose state was still valid.
    pub reused: usize,
    /// Whether a note's state differs from before (or a note came or went): worth saving.
    pub changed: bool,
    /// Whether what is shown of a state differs (fresh or stale, why, where each citation is
    /// now), or a note came or went: what shows notes redraws.
    pub shown_changed: bool,
}

impl Checked {
    /// Counts a note checked again, `old` being its state before (if any).
    fn rechecked(&mut self, old: Option<&State>, new: &State) {
        self.rechecked += 1;
        self.changed |= old.is_none_or(|old| old != new);
        self.shown_changed |=
            old.is_none_or(|old| old.stale != new.stale || old.citations != new.citations);
    }
}

/// What a state depends on in the note: its citations (its text and title do not change
/// where the cited code is).
fn note_hash(note: &Note) -> String {
    let mut h = blake3::Hasher::new();
    for c in &note.front.citations {
        for part in [
            c.path.as_str(),
            c.lines.as_deref().unwrap_or(""),
            c.symbol.as_deref().unwrap_or(""),
            &c.hash,
        ] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        h.update(&[1]);
    }
    h.finalize().to_hex()[..16].to_string()
}

/// Checks one note now.
pub fn check_note(note: &Note, code: &dyn Code) -> State {
    check_one(note, &Files::new(code))
}

fn check_one(note: &Note, files: &Files<'_>) -> State {
    let code = files.code;
    let generation = code.generation();
    let mut deps = BTreeMap::new();
    let mut wide = None;
    let mut citations = Vec::with_capacity(note.front.citations.len());
    let mut stale = None;
    for c in &note.front.citations {
        let (resolution, paths, everywhere) = resolve_with(c, files);
        for path in paths {
            let version = code.version(&path).unwrap_or_default();
            deps.insert(path, version);
        }
        if everywhere {
            wide = Some(generation.clone());
        }
        let state = match resolution {
            Resolution::Found { path, start, end, hash } => {
                let now = format!("{path}:{}", super::note::format_lines(start, end));
                if hash != c.hash {
                    let reason = if path != c.path {
                        format!("the cited code moved to {now} and changed")
                    } else if c.symbol.is_some() {
                        format!("the cited code changed (now at {now})")
                    } else {
                        format!("the text at {now} changed")
                    };
                    CiteState {
                        label: c.label(),
                        status: Status::Changed,
                        reason: Some(reason),
                        now: Some(now),
                    }
                } else {
                    let same = path == c.path && c.line_range() == Some((start, end));
                    let status = if same { Status::Fresh } else { Status::Moved };
                    CiteState { label: c.label(), status, now: Some(now), reason: None }
                }
            }
            Resolution::Lost(reason) => CiteState {
                label: c.label(),
                status: Status::Lost,
                now: None,
                reason: Some(reason),
            },
        };
        if stale.is_none()
            && let Some(reason) = &state.reason
        {
            stale = Some(format!("{}: {reason}", state.label));
        }
        citations.push(state);
    }
    State { stale, citations, note: note_hash(note), deps, wide }
}

/// Checks `notes` against `code`, reusing from `before` every state whose note and files have
/// not changed since (moved out of it, not copied). Notes no longer present are dropped.
pub fn check(notes: &[Note], code: &dyn Code, mut before: States) -> (States, Checked) {
    if notes.is_empty() {
        let changed = !before.notes.is_empty();
        let none = Checked { changed, shown_changed: changed, ..Checked::default() };
        return (States::default(), none);
    }
    let generation = code.generation();
    let mut out = States { generation: generation.clone(), notes: BTreeMap::new() };
    let mut did = Checked::default();
    // Each file's version, looked up once however many notes depend on it.
    let mut versions: HashMap<String, String> = HashMap::new();
    let mut version = |path: &str| -> String {
        if let Some(v) = versions.get(path) {
            return v.clone();
        }
        let v = code.version(path).unwrap_or_default();
        versions.insert(path.to_string(), v.clone());
        v
    };
    let files = Files::new(code);
    for note in notes {
        let old = before.notes.remove(&note.slug);
        let valid = old.as_ref().is_some_and(|old| {
            old.wide.as_ref().is_none_or(|g| *g == generation)
                && old.deps.iter().all(|(path, v)| !v.is_empty() && version(path) == *v)
                && old.note == note_hash(note)
        });
        let state = match old {
            Some(old) if valid => {
                did.reused += 1;
                old
            }
            old => {
                let new = check_one(note, &files);
                did.rechecked(old.as_ref(), &new);
                new
            }
        };
        out.notes.insert(note.slug.clone(), state);
    }
    // Notes that were checked before and are gone now.
    did.changed |= !before.notes.is_empty();
    did.shown_changed |= !before.notes.is_empty();
    (out, did)
}

/// [`check`] for notes that have not changed since `before` was computed from them, when the
/// code can say which files changed since `before`'s generation: only the notes depending on
/// those files (or on every file) are looked at; the other states stay as they are, without a
/// version lookup each. `None` when the code cannot say, or the states do not match the notes.
pub fn recheck_changed(
    notes: &[Note],
    code: &dyn Code,
    mut before: States,
) -> Result<(States, Checked), States> {
    if before.notes.len() != notes.len()
        || notes.iter().any(|n| !before.notes.contains_key(&n.slug))
    {
        return Err(before);
    }
    // The same commit (an update that changed nothing): every state holds.
    if !before.generation.is_empty() && before.generation == code.generation() {
        let kept = Checked { reused: notes.len(), ..Checked::default() };
        return Ok((before, kept));
    }
    let Some(changed) = code.changed_since(&before.generation) else { return Err(before) };
    let changed: std::collections::HashSet<String> = changed.into_iter().collect();
    let files = Files::new(code);
    let mut did = Checked::default();
    for note in notes {
        let Some(old) = before.notes.get_mut(&note.slug) else { continue };
        if old.wide.is_none() && !old.deps.keys().any(|p| changed.contains(p)) {
            did.reused += 1;
            continue;
        }
        let new = check_one(note, &files);
        did.rechecked(Some(old), &new);
        *old = new;
    }
    before.generation = code.generation();
    Ok((before, did))
}

/// The code of an indexed workspace: text from disk through the sandbox's policy (never a
/// secret file, never outside the root), versions from the index's manifest, definitions found
/// through the index's symbol field. The manifest is read on first use, so a workspace without
/// notes never pays for it; when it cannot be read, versions are unknown and every note is
/// checked again (slower, never wrong).
pub struct IndexedCode<'a> {
    root: &'a Path,
    index: &'a CodeIndex,
    policy: &'a Policy,
    /// The manifest of the latest commit and its name.
    manifest: std::cell::OnceCell<(std::sync::Arc<Manifest>, String)>,
}

/// Files larger than this are not cited.
const MAX_CITED_BYTES: u64 = 4 * 1024 * 1024;

impl<'a> IndexedCode<'a> {
    /// The code of `index`'s latest commit.
    pub fn new(index: &'a CodeIndex, policy: &'a Policy) -> IndexedCode<'a> {
        IndexedCode { root: index.root(), index, policy, manifest: std::cell::OnceCell::new() }
    }

    fn manifest(&self) -> &(std::sync::Arc<Manifest>, String) {
        self.manifest.get_or_init(|| {
            self.index.manifest_shared().unwrap_or_else(|e| {
                tracing::warn!(
                    "memory: the index manifest cannot be read, every note is checked again: {e}"
                );
                (Default::default(), String::new())
            })
        })
    }
}

impl Code for IndexedCode<'_> {
    fn relative(&self, path: &str) -> Result<String, String> {
        let abs = self.policy.resolve_read(path).map_err(|d| d.reason)?;
        let rel =
            abs.strip_prefix(self.root).map_err(|_| format!("{path} is outside the workspace"))?;
        if self.policy.is_secret(rel) {
            return Err(format!("{path} is a secret file: notes never cite secrets"));
        }
        Ok(sift_indexer::walk::relative(Path::new(""), rel))
    }

    fn text(&self, rel: &str) -> Option<String> {
        let file = self.policy.open_read(rel).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_CITED_BYTES + 1).read_to_end(&mut bytes).ok()?;
        if bytes.len() as u64 > MAX_CITED_BYTES {
            return None;
        }
        String::from_utf8(bytes).ok()
    }

    fn version(&self, rel: &str) -> Option<String> {
        self.manifest().0.files.get(rel).map(|r| r.hash.clone())
    }

    fn generation(&self) -> String {
        self.manifest().1.clone()
    }

    fn changed_since(&self, generation: &str) -> Option<Vec<String>> {
        // The generation is the manifest's name, already read for this check.
        self.index.changed_between(generation, &self.generation())
    }

    fn definitions(&self, rel: &str, text: &str) -> Vec<cite::Definition> {
        // The last index update's parse, when it indexed this very text (a server keeps them
        // for its notes: `CodeIndex::keep_definitions`); else parsed here.
        match self.index.definitions_of(rel, text) {
            Some(chunks) => cite::to_definitions(chunks.iter().cloned()),
            None => cite::definitions(rel, text),
        }
    }

    fn defining(&self, name: &str) -> Vec<String> {
        // Chunks that define the name rank first (the symbol field weighs most); members of
        // small classes are inside their class's chunk, so every file among the first hits is
        // a candidate, confirmed by parsing it.
        let opts = sift_indexer::SearchOptions {
            max_per_file: Some(1),
            ..sift_indexer::SearchOptions::top(20)
        };
        let Ok(hits) = self.index.search(name, &opts) else { return Vec::new() };
        let mut paths: Vec<String> = hits.into_iter().map(|h| h.path).collect();
        paths.dedup();
        paths
    }
}
