//! Memory notes on a real index through scripted histories: edits inside, outside and around a
//! cited symbol, renames, moves within and across files, deletions, line citations; each step
//! re-indexes and re-checks, and the expected state is asserted (and printed as a table).

use std::path::Path;

use sift_engine::memory::{self, Code, IndexedCode, Memory, MemoryError, Notebook, Status, find};
use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::sandbox::{Policy, SandboxSettings};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const CACHE: &str = "class Cache:\n    \"\"\"An LRU cache.\"\"\"\n\n    def get(self, key):\n        value = self.items.pop(key)\n        self.items[key] = value\n        return value\n\n    def put(self, key, value):\n        self.items[key] = value\n\n\ndef backoff(attempt):\n    return min(60, 2 ** attempt)\n";

const LIB: &str = "pub fn parse(text: &str) -> u32 {\n    text.trim().parse().unwrap_or(0)\n}\n\npub fn other() {}\n";

struct Repo {
    dir: tempfile::TempDir,
    index: CodeIndex,
    policy: Policy,
    memory: Memory,
    /// A notebook kept across updates as a server keeps it (re-checked, never re-loaded, while
    /// the notes stay the same).
    live: std::cell::RefCell<Option<Notebook>>,
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "app/cache.py", CACHE);
        write(dir.path(), "src/lib.rs", LIB);
        write(dir.path(), "README.md", "# app\n\nRun it with `make run`.\nIt needs Python 3.11.\n");
        write(dir.path(), ".env", "TOKEN=abc\n");
        let store = sift_engine::store::open(dir.path()).unwrap();
        let (index, _) = CodeIndex::open_or_create(&store).unwrap();
        index.update(&UpdateOptions::default(), &NoProgress).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let policy = Policy::for_workspace(&root, &SandboxSettings::default()).unwrap();
        Repo { memory: Memory::open(&store), dir, index, policy, live: Default::default() }
    }

    fn code(&self) -> IndexedCode<'_> {
        IndexedCode::new(&self.index, &self.policy)
    }

    fn add(&self, text: &str, cites: &[&str]) -> String {
        let cites: Vec<String> = cites.iter().map(|s| s.to_string()).collect();
        let note =
            memory::new_note(&self.memory, &self.code(), memory::Draft::new(text, &cites)).unwrap();
        self.memory.write(&note).unwrap();
        note.slug
    }

    fn edit(&self, rel: &str, f: impl FnOnce(String) -> String) {
        let path = self.dir.path().join(rel);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        write(self.dir.path(), rel, &f(text));
        self.update();
    }

    fn update(&self) {
        self.index.update(&UpdateOptions::default(), &NoProgress).unwrap();
        self.index.reload().unwrap();
    }

    /// The notes checked from scratch; a server's notebook, re-checked after the same updates,
    /// must agree with it.
    fn book(&self) -> Notebook {
        let full = Notebook::load(self.memory.clone(), &self.code());
        let mut live = self.live.borrow_mut();
        match live.as_mut() {
            Some(book) if book.notes == full.notes => {
                book.recheck_code(&self.code());
                assert_eq!(book.states.notes, full.states.notes, "re-checked as a server does");
            }
            _ => *live = Some(full.clone()),
        }
        full
    }
}

/// (step, note, expected word, expected citation status, reason contains)
type Expect<'a> = (&'a str, &'a str, &'a str, Status, &'a str);

fn expect(book: &Notebook, rows: &mut Vec<String>, e: Expect<'_>) {
    let (step, slug, word, status, reason) = e;
    let state = &book.states.notes[slug];
    let cite = &state.citations[0];
    rows.push(format!(
        "| {step} | {slug} | {} | {:?} | {} |",
        state.word(),
        cite.status,
        state.stale.as_deref().or(cite.now.as_deref()).unwrap_or("")
    ));
    assert_eq!(state.word(), word, "{step}: {slug}: {state:?}");
    assert_eq!(cite.status, status, "{step}: {slug}: {state:?}");
    let text = state.stale.clone().unwrap_or_default();
    assert!(text.contains(reason), "{step}: {slug}: {text:?} should say {reason:?}");
}

#[test]
fn staleness_follows_a_scripted_history() {
    scripted_history(false);
}

/// The same history, with the definitions taken from the index updates' own parse (as the
/// server has it once there are notes) instead of parsed by the check.
#[test]
fn staleness_is_the_same_with_the_definitions_the_index_kept() {
    scripted_history(true);
}

fn scripted_history(kept: bool) {
    let repo = Repo::new();
    repo.index.keep_definitions(kept);
    let get = repo.add(
        "Cache.get moves the key to the end: that is the LRU order.",
        &["app/cache.py#Cache.get"],
    );
    let put = repo.add("put never evicts; eviction happens in a sweep.", &["app/cache.py#put"]);
    let backoff = repo.add("Backoff is capped at 60 seconds.", &["app/cache.py#backoff"]);
    let parse = repo.add("parse returns 0 on bad input instead of failing.", &["src/lib.rs#parse"]);
    let readme = repo.add("The README says which Python.", &["README.md:4"]);
    let mut rows = vec!["| step | note | state | citation | reason or where |".to_string()];

    let book = repo.book();
    assert_eq!(book.checked.rechecked, 5);
    for slug in [&get, &put, &backoff, &parse, &readme] {
        expect(&book, &mut rows, ("written", slug, "fresh", Status::Fresh, ""));
    }

    // An edit outside every cited symbol (a new method at the end of the file).
    repo.edit("app/cache.py", |t| t + "\n\ndef unrelated():\n    return 1\n");
    let now = std::fs::read_to_string(repo.dir.path().join("app/cache.py")).unwrap();
    assert_eq!(repo.index.definitions_of("app/cache.py", &now).is_some(), kept);
    let book = repo.book();
    expect(&book, &mut rows, ("edit outside", &get, "fresh", Status::Fresh, ""));
    expect(&book, &mut rows, ("edit outside", &backoff, "fresh", Status::Fresh, ""));
    assert_eq!(book.checked.reused, 2, "notes on other files are not re-checked");

    // Lines added above: the symbols move down, their text unchanged.
    repo.edit("app/cache.py", |t| format!("import os\nimport sys\n\n\n{t}"));
    let book = repo.book();
    expect(&book, &mut rows, ("lines added above", &get, "moved", Status::Moved, ""));
    assert!(book.states.notes[&get].citations[0].now.as_deref() == Some("app/cache.py:8-11"));
    // Verify follows the move: the note is fresh at its new place.
    let mut note = repo.memory.read(&get).unwrap();
    memory::reanchor(&mut note, &repo.code()).unwrap();
    repo.memory.write(&note).unwrap();
    expect(&repo.book(), &mut rows, ("verify", &get, "fresh", Status::Fresh, ""));

    // An edit inside the cited symbol.
    repo.edit("app/cache.py", |t| {
        t.replace(
            "self.items[key] = value\n        return",
            "self.items[key] = value  # most recent\n        return",
        )
    });
    let book = repo.book();
    expect(&book, &mut rows, ("edit inside", &get, "stale", Status::Changed, "changed"));
    expect(&book, &mut rows, ("edit inside get", &put, "moved", Status::Moved, ""));

    // A rename of the cited symbol.
    repo.edit("app/cache.py", |t| t.replace("def put(", "def store("));
    let book = repo.book();
    expect(&book, &mut rows, ("rename", &put, "stale", Status::Lost, "no longer defined"));

    // A move to another file, text unchanged (re-indented would count the same).
    let moved = "def backoff(attempt):\n    return min(60, 2 ** attempt)\n";
    repo.edit("app/cache.py", |t| t.replace(moved, ""));
    repo.edit("app/retry.py", |_| format!("import math\n\n\n{moved}"));
    let book = repo.book();
    expect(&book, &mut rows, ("move to another file", &backoff, "moved", Status::Moved, ""));
    assert_eq!(book.states.notes[&backoff].citations[0].now.as_deref(), Some("app/retry.py:4-5"));

    // A second definition elsewhere while the first stays: still the first.
    repo.edit("src/extra.rs", |_| "pub fn parse(text: &str) -> u32 {\n    7\n}\n".into());
    expect(&repo.book(), &mut rows, ("duplicate elsewhere", &parse, "fresh", Status::Fresh, ""));

    // The cited file deleted: the symbol is defined elsewhere, but differently.
    std::fs::remove_file(repo.dir.path().join("src/lib.rs")).unwrap();
    repo.update();
    let book = repo.book();
    expect(&book, &mut rows, ("file deleted", &parse, "stale", Status::Changed, "changed"));
    assert_eq!(book.states.notes[&parse].citations[0].now.as_deref(), Some("src/extra.rs:1-3"));
    std::fs::remove_file(repo.dir.path().join("src/extra.rs")).unwrap();
    repo.update();
    let book = repo.book();
    expect(&book, &mut rows, ("both deleted", &parse, "stale", Status::Lost, "was deleted"));

    // Line citations: moved with lines added above, then changed.
    repo.edit("README.md", |t| format!("<!-- badge -->\n{t}"));
    expect(&repo.book(), &mut rows, ("line moved", &readme, "moved", Status::Moved, ""));
    repo.edit("README.md", |t| t.replace("3.11", "3.12"));
    expect(&repo.book(), &mut rows, ("line changed", &readme, "stale", Status::Changed, "changed"));

    // Deleting the symbol from its file.
    repo.edit("app/cache.py", |t| t.replace("class Cache:", "class Store:"));
    let book = repo.book();
    expect(
        &book,
        &mut rows,
        ("container renamed", &get, "stale", Status::Lost, "no longer defined"),
    );

    // Stale notes rank below fresh ones.
    let answers = find::find(
        &book.notes,
        &book.states,
        &find::Ask { text: "backoff cache get order", paths: &[], k: 10, fresh_only: false },
        None,
    );
    let first_stale = answers.iter().position(|a| a.is_stale()).unwrap();
    assert!(answers[..first_stale].iter().all(|a| !a.is_stale()));
    assert!(answers[first_stale..].iter().all(|a| a.is_stale()), "fresh before stale");
    eprintln!("{}", rows.join("\n"));
}

#[test]
fn citations_that_do_not_resolve_say_why() {
    let repo = Repo::new();
    let code = repo.code();
    let err = |spec: &str| match memory::cite(&code, spec) {
        Err(MemoryError::Citation { reason, .. }) => reason,
        other => panic!("{spec}: {other:?}"),
    };
    assert!(
        err("app/cache.py#nothing").contains("it defines Cache"),
        "{}",
        err("app/cache.py#nothing")
    );
    assert!(err("app/cache.py:40-50").contains("has 14 lines"));
    assert!(err("missing.py").contains("cannot be read") || err("missing.py").contains("missing"));
    assert!(err("../outside.py").contains("outside"), "{}", err("../outside.py"));
    assert!(err(".env").contains("secret"), "{}", err(".env"));
    assert!(err("app/cache.py#").contains("no symbol"));
    write(
        repo.dir.path(),
        "app/two.py",
        "class A:\n    def run(self): pass\n\nclass B:\n    def run(self): pass\n",
    );
    assert!(err("app/two.py#run").contains("qualify"), "{}", err("app/two.py#run"));
    let c = memory::cite(&code, "app/two.py#B.run").unwrap();
    assert_eq!(c.lines.as_deref(), Some("5"));
    let whole = memory::cite(&code, "README.md").unwrap();
    assert_eq!(whole.lines.as_deref(), Some("1-4"));
    // A note that cannot be re-anchored is left as it was.
    let slug = repo.add("Note on B.run", &["app/two.py#B.run"]);
    std::fs::remove_file(repo.dir.path().join("app/two.py")).unwrap();
    let mut note = repo.memory.read(&slug).unwrap();
    let before = note.clone();
    assert!(memory::reanchor(&mut note, &code).is_err());
    assert_eq!(note, before);
    assert!(code.text("app/two.py").is_none());
}

#[test]
fn an_agents_note_about_the_task_is_refused_and_a_users_is_not() {
    let repo = Repo::new();
    let code = repo.code();
    let text = "The task is done once I've updated Cache.get";
    let agent = memory::Draft { author: memory::Author::Agent, ..memory::Draft::new(text, &[]) };
    match memory::new_note(&repo.memory, &code, agent) {
        Err(e @ MemoryError::AboutTheTask(_)) => {
            assert!(e.to_string().contains("not about the task at hand"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Whole words only: a "todolist" key is not a "todo".
    let fact = "Ill-formed keys make Cache.get raise; a todolist key is fine";
    let agent = memory::Draft { author: memory::Author::Agent, ..memory::Draft::new(fact, &[]) };
    assert!(memory::new_note(&repo.memory, &code, agent).is_ok());
    assert!(memory::new_note(&repo.memory, &code, memory::Draft::new(text, &[])).is_ok());
}

#[test]
fn broken_note_files_are_reported_and_kept() {
    let repo = Repo::new();
    repo.add("A fine note.", &[]);
    write(repo.dir.path(), ".sift/memory/broken.md", "no front matter here\n");
    let book = repo.book();
    assert_eq!(book.notes.len(), 1);
    assert_eq!(book.broken.len(), 1);
    assert!(book.broken[0].to_string().contains("broken.md"));
    assert!(repo.dir.path().join(".sift/memory/broken.md").exists());
    assert!(matches!(repo.memory.read("../x"), Err(MemoryError::BadSlug(_))));
    assert!(matches!(repo.memory.remove("nope"), Err(MemoryError::NoSuchNote(_))));
}
