//! Memory notes: what was learned about a codebase, one fact per file in `.sift/memory/`, each
//! citing the code it is about and knowing when that code has changed.
//!
//! - [`note`]: the file format (TOML front matter between `+++` lines, then Markdown).
//! - [`cite`]: definitions of a file, the hash of cited text, where a citation is now.
//! - [`check`]: every note's state against the code (fresh, moved, stale with the reason),
//!   incremental: a note is looked at again only when it or a file it depends on changed.
//! - [`find`]: retrieval, with the index's tokenizer, the workspace's embedder and the
//!   search's own fusion; fresh notes rank before stale ones.
//!
//! Nothing here writes a note unless asked: [`Memory::write`] is called by `sift memory add`,
//! `edit`, `verify` and the editor's commands; the agent's `remember` only proposes a note.
//! The states are a cache (`.sift/memory-state.json`, gitignored), so checking never rewrites a
//! committed file.

use std::path::{Path, PathBuf};

use sift_indexer::store::Store;

pub mod check;
pub mod cite;
pub mod find;
pub mod note;

pub use check::{CiteState, Code, IndexedCode, State, States, Status};
pub use note::{Author, Citation, Front, Note, ParseError};

pub use crate::store::{
    MEMORY_ENTRIES as STORE_ENTRIES, MEMORY_STATE_FILE as STATE_FILE, NOTES_DIR,
};

/// What went wrong with a note or a citation; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// No note has this slug.
    #[error("no note {0:?} in .sift/memory/ (`sift memory list` shows them)")]
    NoSuchNote(String),
    /// A slug that sift would not write.
    #[error("{0:?} is not a note's name: lowercase letters, digits and `-` only")]
    BadSlug(String),
    /// A note file that does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A citation that does not resolve (why, and what would).
    #[error("citation {spec}: {reason}")]
    Citation {
        /// The citation as given.
        spec: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// The note is empty.
    #[error("a note needs some text")]
    Empty,
    /// An agent's note about the task at hand rather than the codebase.
    #[error(
        "notes are for lasting facts about this codebase (conventions, invariants, pitfalls), \
         not about the task at hand (the text says {0:?}); leave it out of memory"
    )]
    AboutTheTask(&'static str),
    /// Reading or writing a note failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The store refused the write.
    #[error(transparent)]
    Store(#[from] sift_indexer::Error),
}

/// The notes folder of one repository.
#[derive(Debug, Clone)]
pub struct Memory {
    dir: PathBuf,
    state: PathBuf,
}

impl Memory {
    /// The notes of the store's repository (nothing is created until a note is written).
    pub fn open(store: &Store) -> Memory {
        Memory { dir: store.path(&NOTES_DIR), state: store.path(&STATE_FILE) }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A note's file.
    pub fn path(&self, slug: &str) -> PathBuf {
        self.dir.join(format!("{slug}.md"))
    }

    /// Every note, by slug, and the files that do not parse (reported, never dropped or
    /// rewritten). No folder: no notes.
    pub fn load(&self) -> (Vec<Note>, Vec<ParseError>) {
        let (notes, broken, _) = self.load_since(Vec::new(), &Stamps::new());
        (notes, broken)
    }

    /// [`Memory::load`], reusing the notes of `before` whose file has not changed since
    /// `stamps` (size and modification time): only new or changed files are read.
    pub fn load_since(
        &self,
        before: Vec<Note>,
        stamps: &Stamps,
    ) -> (Vec<Note>, Vec<ParseError>, Stamps) {
        // Taken from, not searched: a thousand notes are a thousand lookups, not a million.
        let mut before: std::collections::HashMap<String, Note> =
            before.into_iter().map(|n| (n.slug.clone(), n)).collect();
        let mut next = Stamps::new();
        let mut notes = Vec::new();
        let mut broken = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return (notes, broken, next) };
        let mut files: Vec<(String, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let path = e.path();
                let slug = path.file_name()?.to_str()?.strip_suffix(".md")?.to_string();
                e.file_type().ok()?.is_file().then_some((slug, path))
            })
            .collect();
        files.sort();
        for (slug, path) in files {
            let stamp = std::fs::metadata(&path).ok().map(|m| {
                let time =
                    m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                (m.len(), time.map_or(0, |d| d.as_nanos()))
            });
            if let Some(stamp) = stamp {
                // A file changed within the clock's granularity could look unchanged: read it
                // again unless its time is safely in the past.
                let settled = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .is_ok_and(|now| now.as_nanos().saturating_sub(stamp.1) > 2_000_000_000);
                if settled
                    && stamps.get(&slug) == Some(&stamp)
                    && let Some(old) = before.remove(&slug)
                {
                    next.insert(slug, stamp);
                    notes.push(old);
                    continue;
                }
                next.insert(slug.clone(), stamp);
            }
            match std::fs::read(&path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => match Note::parse(&slug, &text) {
                        Ok(note) => notes.push(note),
                        Err(e) => broken.push(e),
                    },
                    Err(_) => broken.push(ParseError { slug, reason: "not UTF-8 text".into() }),
                },
                Err(e) => broken.push(ParseError { slug, reason: e.to_string() }),
            }
        }
        (notes, broken, next)
    }

    /// One note.
    pub fn read(&self, slug: &str) -> Result<Note, MemoryError> {
        if !note::valid_slug(slug) {
            return Err(MemoryError::BadSlug(slug.into()));
        }
        let path = self.path(slug);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(MemoryError::NoSuchNote(slug.into()));
            }
            Err(source) => return Err(MemoryError::Io { path, source }),
        };
        Ok(Note::parse(slug, &text)?)
    }

    /// Writes a note (atomically; the folder is made when missing).
    pub fn write(&self, note: &Note) -> Result<PathBuf, MemoryError> {
        if !note::valid_slug(&note.slug) {
            return Err(MemoryError::BadSlug(note.slug.clone()));
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|source| MemoryError::Io { path: self.dir.clone(), source })?;
        let path = self.path(&note.slug);
        sift_indexer::store::write_atomic(&path, note.render().as_bytes())?;
        Ok(path)
    }

    /// A slug for `title` that no note has yet (`-2`, `-3`… appended).
    pub fn free_slug(&self, title: &str) -> String {
        let base = note::slugify(title);
        let mut slug = base.clone();
        let mut n = 2;
        while self.path(&slug).exists() {
            slug = format!("{base}-{n}");
            n += 1;
        }
        slug
    }

    /// Deletes a note.
    pub fn remove(&self, slug: &str) -> Result<(), MemoryError> {
        if !note::valid_slug(slug) {
            return Err(MemoryError::BadSlug(slug.into()));
        }
        let path = self.path(slug);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(MemoryError::NoSuchNote(slug.into()))
            }
            Err(source) => Err(MemoryError::Io { path, source }),
        }
    }

    /// The cached states (empty when there is no cache or it does not parse).
    pub fn cached_states(&self) -> States {
        std::fs::read(&self.state)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Keeps the states for the next process (best effort: it is a cache). Replaced whole by a
    /// rename, so a reader never sees half a file, but not synced to disk: after a crash the
    /// states are at worst older (or unreadable, and then computed again), never wrong, since
    /// each records the file versions it was checked against.
    pub fn save_states(&self, states: &States) {
        let Some(dir) = self.state.parent().filter(|d| d.exists()) else { return };
        let written = serde_json::to_vec(states).map_err(std::io::Error::other).and_then(|bytes| {
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut file, &bytes)?;
            file.persist(&self.state).map_err(|e| e.error)?;
            Ok(())
        });
        if let Err(e) = written {
            tracing::debug!("could not keep the memory states: {e}");
        }
    }
}

/// Note files' sizes and modification times (ns), by slug.
pub type Stamps = std::collections::HashMap<String, (u64, u128)>;

/// Today, `YYYY-MM-DD` (UTC).
pub fn today() -> String {
    sift_runtime::rules::feedback::rfc3339(std::time::SystemTime::now())[..10].to_string()
}

/// Builds a citation from `PATH`, `PATH:LINES` or `PATH#SYMBOL` against the code as it is now:
/// the symbol must be defined exactly once in the file (qualify it as `Container.name`
/// otherwise), the lines must exist. `PATH` alone cites the whole file.
pub fn cite(code: &dyn Code, spec: &str) -> Result<Citation, MemoryError> {
    let fail = |reason: String| MemoryError::Citation { spec: spec.to_string(), reason };
    let (path, symbol, lines) = if let Some((p, s)) = spec.split_once('#') {
        (p, Some(s.trim()), None)
    } else if let Some((p, l)) = spec.rsplit_once(':')
        && l.chars().all(|c| c.is_ascii_digit() || c == '-')
        && !l.is_empty()
    {
        let range =
            note::parse_lines(l).ok_or_else(|| fail(format!("{l:?} is not `N` or `N-M`")))?;
        (p, None, Some(range))
    } else {
        (spec, None, None)
    };
    let rel = code.relative(path).map_err(fail)?;
    let text = code.text(&rel).ok_or_else(|| {
        fail(format!("{rel} cannot be read (missing, not text, or a secret file)"))
    })?;
    if let Some(symbol) = symbol {
        if symbol.is_empty() {
            return Err(fail("no symbol after `#`".into()));
        }
        let defs = cite::definitions(&rel, &text);
        let found = cite::matching(&defs, symbol);
        return match found.as_slice() {
            [d] => Ok(Citation {
                path: rel,
                lines: Some(note::format_lines(d.start, d.end)),
                symbol: Some(symbol.to_string()),
                hash: cite::text_hash(&cite::lines_of(&text, d.start, d.end).unwrap_or_default()),
            }),
            [] => {
                let mut names: Vec<String> = defs.iter().map(|d| d.qualified()).collect();
                names.truncate(12);
                Err(fail(if names.is_empty() {
                    format!("{rel} defines no symbols sift can see; cite lines instead")
                } else {
                    format!("{symbol} is not defined in {rel}; it defines {}", names.join(", "))
                }))
            }
            several => Err(fail(format!(
                "{symbol} is defined {} times in {rel} ({}); qualify it",
                several.len(),
                several.iter().map(|d| d.qualified()).collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    let total = text.lines().count();
    let (start, end) = lines.unwrap_or((1, total.max(1)));
    let cited = cite::lines_of(&text, start, end)
        .ok_or_else(|| fail(format!("{rel} has {total} lines")))?;
    Ok(Citation {
        path: rel,
        lines: Some(note::format_lines(start, end)),
        symbol: None,
        hash: cite::text_hash(&cited),
    })
}

/// What a new note says, before its citations are resolved.
#[derive(Debug, Clone)]
pub struct Draft<'a> {
    /// The fact.
    pub text: &'a str,
    /// The title (default: the text's first line).
    pub title: Option<&'a str>,
    /// Citations as `PATH`, `PATH:LINES` or `PATH#SYMBOL`.
    pub cites: &'a [String],
    /// Path globs.
    pub scope: Vec<String>,
    /// Who writes it.
    pub author: Author,
    /// Where it came from.
    pub origin: Option<String>,
}

impl<'a> Draft<'a> {
    /// A user's note with these citations, no title, scope or origin.
    pub fn new(text: &'a str, cites: &'a [String]) -> Draft<'a> {
        Draft { text, title: None, cites, scope: Vec::new(), author: Author::User, origin: None }
    }
}

/// Phrases of notes about the task at hand rather than the codebase.
const TASK_TALK: &[&str] = &[
    "this task",
    "the task",
    "i will",
    "i'll",
    "i have",
    "i've",
    "i am",
    "i'm",
    "next step",
    "todo",
    "in this session",
    "the user asked",
];

/// The phrase that makes `text` a note about the task at hand (a whole-word match, any case).
pub fn task_talk(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    TASK_TALK.iter().copied().find(|phrase| {
        lower.match_indices(phrase).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// A new note from the user or the agent: the title is the text's first line unless given,
/// the citations are resolved now (see [`cite`]). An agent's note about the task at hand
/// ([`task_talk`]) is refused, whichever front end the agent came through (sift's own agent,
/// an MCP client); the user may write what they like.
pub fn new_note(memory: &Memory, code: &dyn Code, draft: Draft<'_>) -> Result<Note, MemoryError> {
    let Draft { text, title, cites: citations, scope, author, origin } = draft;
    let body = text.trim();
    if body.is_empty() {
        return Err(MemoryError::Empty);
    }
    if author == Author::Agent
        && let Some(phrase) = task_talk(body)
    {
        return Err(MemoryError::AboutTheTask(phrase));
    }
    let title = title.map(str::to_string).unwrap_or_else(|| note::title_from(body));
    let citations = citations.iter().map(|spec| cite(code, spec)).collect::<Result<Vec<_>, _>>()?;
    let today = today();
    Ok(Note {
        slug: memory.free_slug(&title),
        front: Front {
            title,
            scope,
            created: today.clone(),
            updated: today,
            author,
            origin,
            citations,
            other: toml::Table::new(),
        },
        body: body.to_string(),
    })
}

/// Re-anchors a note to the code as it is now (the user says it still holds): every citation
/// that can be found gets its current path, lines and hash, and `updated` becomes today.
/// Fails, changing nothing, when a citation cannot be found at all.
pub fn reanchor(note: &mut Note, code: &dyn Code) -> Result<(), MemoryError> {
    let mut citations = Vec::with_capacity(note.front.citations.len());
    for c in &note.front.citations {
        match check::resolve(c, code) {
            check::Resolution::Found { path, start, end, hash } => citations.push(Citation {
                path,
                lines: Some(note::format_lines(start, end)),
                symbol: c.symbol.clone(),
                hash,
            }),
            check::Resolution::Lost(reason) => {
                return Err(MemoryError::Citation { spec: c.label(), reason });
            }
        }
    }
    note.front.citations = citations;
    note.front.updated = today();
    Ok(())
}

/// The notes of a workspace with their states, as checked against its code.
#[derive(Debug, Clone)]
pub struct Notebook {
    /// The folder.
    pub memory: Memory,
    /// Every note that parses, by slug.
    pub notes: Vec<Note>,
    /// Note files that do not parse.
    pub broken: Vec<ParseError>,
    /// Every note's state.
    pub states: States,
    /// What the last check did.
    pub checked: check::Checked,
    /// The note files as last read.
    stamps: Stamps,
    /// States changed since they were last saved ([`Notebook::save`]).
    unsaved: bool,
}

impl Notebook {
    /// Loads the notes and checks them against `code`, reusing the cached states that still
    /// hold, and keeps the new states for the next process.
    pub fn load(memory: Memory, code: &dyn Code) -> Notebook {
        let (notes, broken, stamps) = memory.load_since(Vec::new(), &Stamps::new());
        let mut book = Notebook { notes, broken, stamps, ..Notebook::empty(memory) };
        let before = book.memory.cached_states();
        book.recheck(code, before);
        book.save();
        book
    }

    /// Keeps the states for the next process (`.sift/memory-state.json`) when one changed
    /// since the last save. [`Notebook::reload`] and [`Notebook::recheck_code`] leave it to
    /// the caller, so a server can answer first and write the cache after.
    pub fn save(&mut self) {
        if self.unsaved {
            self.memory.save_states(&self.states);
            self.unsaved = false;
        }
    }

    /// No notes yet.
    fn empty(memory: Memory) -> Notebook {
        Notebook {
            memory,
            notes: Vec::new(),
            broken: Vec::new(),
            states: States::default(),
            checked: check::Checked::default(),
            stamps: Stamps::new(),
            unsaved: false,
        }
    }

    /// Reads the notes again (they may have changed on disk) and checks them. Whether anything
    /// an editor shows may have changed: a note file added, removed or changed, or what is
    /// shown of a state (a cited file edited elsewhere leaves it as it was).
    pub fn reload(&mut self, code: &dyn Code) -> bool {
        let before = std::mem::take(&mut self.notes);
        let (notes, broken, stamps) = self.memory.load_since(before, &self.stamps);
        let files_changed = stamps != self.stamps;
        self.notes = notes;
        self.broken = broken;
        self.stamps = stamps;
        let before = std::mem::take(&mut self.states);
        self.recheck(code, before) || files_changed
    }

    /// Checks the notes as last read again against `code` (after an index update, when the
    /// note files are known not to have changed); whether what is shown of a state changed.
    pub fn recheck_code(&mut self, code: &dyn Code) -> bool {
        let before = std::mem::take(&mut self.states);
        let checked = match check::recheck_changed(&self.notes, code, before) {
            Ok(checked) => checked,
            Err(before) => check::check(&self.notes, code, before),
        };
        self.take(checked)
    }

    /// Checks the notes against `code` from the states `before`.
    fn recheck(&mut self, code: &dyn Code, before: States) -> bool {
        let checked = check::check(&self.notes, code, before);
        self.take(checked)
    }

    /// Keeps what a check found; whether what is shown changed. A state that changed at all
    /// makes the states unsaved (see [`Notebook::save`]); only a new generation does not: a
    /// process that finds an older one checks again the few states that depend on it (slower,
    /// never wrong).
    fn take(&mut self, (states, checked): (States, check::Checked)) -> bool {
        self.unsaved |= checked.changed;
        self.states = states;
        self.checked = checked;
        checked.shown_changed
    }

    /// A note and its state.
    pub fn get(&self, slug: &str) -> Option<(&Note, Option<&State>)> {
        self.notes.iter().find(|n| n.slug == slug).map(|n| (n, self.states.notes.get(slug)))
    }

    /// The notes with a citation on `line` (1-based) of `path`, where the code is now.
    pub fn citing(&self, path: &str, line: usize) -> Vec<(&Note, Option<&State>)> {
        self.notes
            .iter()
            .filter_map(|n| {
                let state = self.states.notes.get(&n.slug);
                let hit = n.front.citations.iter().enumerate().any(|(i, c)| {
                    let (p, range) = where_now(c, state, i);
                    p == path && range.is_some_and(|(a, b)| (a..=b).contains(&line))
                });
                hit.then_some((n, state))
            })
            .collect()
    }

    /// The definitions of `path` that notes cite, with how many notes cite each: `(first line,
    /// notes)` where the cited code starts now.
    pub fn cited_in(&self, path: &str) -> Vec<(usize, Vec<&Note>)> {
        let mut at: std::collections::BTreeMap<usize, Vec<&Note>> = Default::default();
        for n in &self.notes {
            let state = self.states.notes.get(&n.slug);
            for (i, c) in n.front.citations.iter().enumerate() {
                let (p, range) = where_now(c, state, i);
                if p == path
                    && let Some((start, _)) = range
                {
                    let list = at.entry(start).or_default();
                    if !list.iter().any(|m| m.slug == n.slug) {
                        list.push(n);
                    }
                }
            }
        }
        at.into_iter().collect()
    }
}

/// Where the `i`th citation of a note is now: its checked location, else what the note says.
fn where_now<'c>(
    c: &'c Citation,
    state: Option<&'c State>,
    i: usize,
) -> (&'c str, Option<(usize, usize)>) {
    let now = state.and_then(|s| s.citations.get(i)).and_then(|s| s.now.as_deref());
    match now.and_then(|n| n.rsplit_once(':')) {
        Some((p, l)) => (p, note::parse_lines(l)),
        None => (c.path.as_str(), c.line_range()),
    }
}

/// A note with its state as JSON: what `sift memory list --json` prints and the server's
/// `sift.memory.*` commands answer (they add the workspace's `root` and the file's `path`).
pub fn to_json(note: &Note, state: Option<&State>) -> serde_json::Value {
    serde_json::json!({
        "slug": note.slug,
        "title": note.front.title,
        "state": state.map_or("unchecked", State::word),
        "stale": state.and_then(|s| s.stale.clone()),
        "scope": note.front.scope,
        "author": note.front.author.as_str(),
        "origin": note.front.origin,
        "created": note.front.created,
        "updated": note.front.updated,
        "citations": note.front.citations.iter().enumerate().map(|(i, c)| {
            let checked = state.and_then(|s| s.citations.get(i));
            serde_json::json!({
                "label": c.label(),
                "path": c.path,
                "lines": c.lines,
                "symbol": c.symbol,
                "hash": c.hash,
                "status": checked.map(|s| s.status),
                "now": checked.and_then(|s| s.now.clone()),
                "reason": checked.and_then(|s| s.reason.clone()),
            })
        }).collect::<Vec<_>>(),
        "text": note.body,
    })
}
