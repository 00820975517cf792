//! Index behaviour on real temporary trees: incremental updates, deletes, ignore rules, guards,
//! format versions and damaged `.sift/` folders.

use std::path::Path;
use std::time::{Duration, SystemTime};

use sift_indexer::{
    CodeIndex, Error, IndexConfig, NoProgress, OpenNotice, STORE_ENTRIES, SearchOptions, Store,
    UpdateOptions, UpdateReport,
};

/// `.sift/` as the indexer alone knows it.
fn store(root: &Path) -> sift_indexer::Result<Store> {
    Store::open(root, &[STORE_ENTRIES])
}

fn open(root: &Path) -> sift_indexer::Result<Option<CodeIndex>> {
    CodeIndex::open(&store(root)?)
}

fn open_or_create(root: &Path) -> sift_indexer::Result<(CodeIndex, Option<OpenNotice>)> {
    CodeIndex::open_or_create(&store(root)?)
}

fn rebuild(root: &Path) -> sift_indexer::Result<CodeIndex> {
    CodeIndex::rebuild(&store(root)?)
}

fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    age(root, rel);
}

/// Sets a file's modification time an hour back, so the manifest trusts it (a file modified
/// within two seconds of an update is re-hashed on the next one, by design).
fn age(root: &Path, rel: &str) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    let file = std::fs::File::options().write(true).open(root.join(rel)).unwrap();
    file.set_modified(past).unwrap();
}

fn opts() -> UpdateOptions {
    UpdateOptions { threads: 2, ..UpdateOptions::default() }
}

fn update(root: &Path) -> (CodeIndex, UpdateReport) {
    let (index, _) = open_or_create(root).unwrap();
    let report = index.update(&opts(), &NoProgress).unwrap();
    (index, report)
}

fn paths(index: &CodeIndex, query: &str) -> Vec<String> {
    let hits = index.search(query, &SearchOptions::top(50)).unwrap();
    let mut paths: Vec<String> = hits.into_iter().map(|h| h.path).collect();
    paths.dedup();
    paths
}

fn sorted(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths
}

fn sample_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/lib.rs",
        "/// Loads settings.\npub fn load_settings(path: &str) -> String {\n    path.to_string()\n}\n",
    );
    write(
        root,
        "src/net/http_client.rs",
        "pub struct HttpClient;\nimpl HttpClient {\n    pub fn send_request(&self) {}\n}\n",
    );
    write(
        root,
        "app/views.py",
        "def render_page(request):\n    return 'page'\n\nclass PageView:\n    def get(self):\n        return render_page(None)\n",
    );
    write(root, "README.md", "# Demo\nA demo project about settings.\n");
    dir
}

#[test]
fn first_update_indexes_everything_and_search_finds_it() {
    let dir = sample_tree();
    let (index, report) = update(dir.path());
    assert_eq!((report.added, report.changed, report.removed), (4, 0, 0));
    assert_eq!(report.files_total, 4);
    assert!(report.chunks_total >= 5, "{report:?}");

    let hits = index.search("loadSettings", &SearchOptions::default()).unwrap();
    let top = &hits[0];
    assert_eq!(top.path, "src/lib.rs");
    assert_eq!((top.start_line, top.end_line), (1, 4));
    assert_eq!(top.symbol.as_deref(), Some("load_settings"));
    assert_eq!(top.kind, "function");
    assert_eq!(top.language, "rust");

    // A small impl is one chunk; the hit points at the line that matched.
    let hits = index.search("send request", &SearchOptions::default()).unwrap();
    assert_eq!(hits[0].path, "src/net/http_client.rs");
    assert_eq!((hits[0].kind.as_str(), hits[0].symbol.as_deref()), ("impl", Some("HttpClient")));
    assert_eq!(hits[0].match_line, 3);
    assert!(hits[0].snippet.contains("pub fn send_request"), "{}", hits[0].snippet);
    // Path words are searchable.
    assert_eq!(paths(&index, "http_client")[0], "src/net/http_client.rs");
}

#[test]
fn second_update_touches_nothing_when_nothing_changed() {
    let dir = sample_tree();
    update(dir.path());
    let (_, report) = update(dir.path());
    assert!(!report.changed_anything(), "{report:?}");
    assert_eq!(report.unchanged, 4);
    assert_eq!(report.bytes_read, 0, "unchanged files must not be read");
    assert_eq!(report.commits, 0);
}

#[test]
fn editing_one_file_reprocesses_only_that_file() {
    let dir = sample_tree();
    let root = dir.path();
    let (index, _) = update(root);
    assert_eq!(paths(&index, "frobnicate"), Vec::<String>::new());
    write(root, "app/views.py", "def frobnicate():\n    return 1\n");
    let (index, report) = update(root);
    assert_eq!((report.added, report.changed, report.removed, report.unchanged), (0, 1, 0, 3));
    assert_eq!(report.bytes_read, "def frobnicate():\n    return 1\n".len() as u64);
    assert_eq!(paths(&index, "frobnicate"), ["app/views.py"]);
    assert_eq!(paths(&index, "render_page"), Vec::<String>::new(), "old chunks must be gone");
}

#[test]
fn touching_without_changing_content_rereads_but_does_not_reindex() {
    let dir = sample_tree();
    let root = dir.path();
    update(root);
    let file = std::fs::File::options().write(true).open(root.join("src/lib.rs")).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
    let (_, report) = update(root);
    assert_eq!((report.touched, report.changed, report.chunks_written), (1, 0, 0));
}

#[test]
fn deleted_and_newly_ignored_files_leave_the_index() {
    let dir = sample_tree();
    let root = dir.path();
    update(root);
    std::fs::remove_file(root.join("README.md")).unwrap();
    write(root, ".gitignore", "app/\n");
    let (index, report) = update(root);
    assert_eq!(report.removed, 2, "{report:?}");
    assert_eq!(report.added, 1, ".gitignore itself is indexed");
    assert_eq!(paths(&index, "render_page"), Vec::<String>::new());
    assert_eq!(paths(&index, "demo"), Vec::<String>::new());
    assert_eq!(report.files_total, 3);
}

#[test]
fn ignore_files_are_honoured_with_negation_and_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // As in git, a file is re-included only when its directory is not itself excluded.
    write(root, ".gitignore", "generated/*\n*.log\n");
    write(root, ".ignore", "vendor/\n");
    write(root, ".siftignore", "secret.txt\n!generated/keep.rs\n");
    write(root, ".cursorignore", "private/\n");
    write(root, "generated/drop.rs", "fn droppedmark() {}\n");
    write(root, "generated/keep.rs", "fn keptmark() {}\n");
    write(root, "vendor/lib.rs", "fn vendoredmark() {}\n");
    write(root, "debug.log", "logmark\n");
    write(root, "secret.txt", "secretmark\n");
    write(root, "private/x.py", "privatemark = 1\n");
    write(root, ".github/workflows/ci.yml", "name: hiddenmark\n");
    write(root, ".git/config", "gitmark\n");
    write(root, "main.rs", "fn mainmark() {}\n");
    let (index, _) = update(root);
    for (query, expected) in [
        ("mainmark", vec!["main.rs"]),
        ("hiddenmark", vec![".github/workflows/ci.yml"]),
        ("keptmark", vec!["generated/keep.rs"]),
        ("droppedmark", vec![]),
        ("vendoredmark", vec![]),
        ("logmark", vec![]),
        ("secretmark", vec![]),
        ("privatemark", vec![]),
        ("gitmark", vec![]),
    ] {
        assert_eq!(paths(&index, query), expected, "{query}");
    }
}

#[test]
fn size_and_binary_guards_skip_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "small.rs", "fn smallmark() {}\n");
    write(root, "big.rs", format!("fn bigmark() {{}}\n{}", "// pad\n".repeat(300)));
    write(root, "blob.bin", b"binmark\x00\x01\x02");
    write(root, "latin1.txt", b"caf\xe9 latinmark\n");
    let (index, _) = open_or_create(root).unwrap();
    let opts = UpdateOptions {
        config: IndexConfig { max_file_size: 1000, ..IndexConfig::default() },
        ..opts()
    };
    let report = index.update(&opts, &NoProgress).unwrap();
    assert_eq!(report.skipped.too_large, 1);
    assert_eq!(report.skipped.binary, 1);
    assert_eq!(report.files_total, 2);
    index.reload().unwrap();
    assert_eq!(paths(&index, "bigmark"), Vec::<String>::new());
    assert_eq!(paths(&index, "binmark"), Vec::<String>::new());
    assert_eq!(paths(&index, "latinmark"), ["latin1.txt"], "invalid UTF-8 is read lossily");

    // An unchanged binary file is still counted, without being read again.
    let again = index.update(&opts, &NoProgress).unwrap();
    assert_eq!((again.skipped.binary, again.bytes_read), (1, 0));

    // A file that grows past the limit leaves the index.
    write(root, "small.rs", format!("fn smallmark() {{}}\n{}", "// pad\n".repeat(300)));
    let report = index.update(&opts, &NoProgress).unwrap();
    assert_eq!((report.removed, report.skipped.too_large), (1, 2));
    assert_eq!(paths(&index, "smallmark"), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn symlink_loops_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a/code.rs", "fn loopedmark() {}\n");
    std::os::unix::fs::symlink("..", root.join("a/up")).unwrap();
    let (index, report) = update(root);
    assert!(report.skipped.symlink_loops >= 1, "{report:?}");
    assert_eq!(paths(&index, "loopedmark"), ["a/code.rs"]);
}

/// The index obeys the sandbox's walls: what it holds reaches prompts through search.
#[cfg(unix)]
#[test]
fn links_leading_outside_and_secret_files_are_left_out_and_counted_unless_opted_in() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (root, outside) = (base.join("repo"), base.join("outside"));
    write(&outside, "creds.txt", "password=outsidemark\n");
    write(&root, "src/main.rs", "fn insidemark() {}\n");
    write(&root, ".env", "API_KEY=dotenvmark\n");
    write(&root, "config/server.pem", "pemmark\n");
    std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("creds.txt"), root.join("creds-link.txt")).unwrap();
    std::os::unix::fs::symlink(".env", root.join("env-link.txt")).unwrap();
    std::os::unix::fs::symlink("src", root.join("inner-link")).unwrap();
    let (index, report) = update(&root);
    assert_eq!(report.skipped.outside_links, 2, "{report:?}");
    assert_eq!(report.skipped.secrets, 3, "{report:?}");
    for mark in ["outsidemark", "dotenvmark", "pemmark"] {
        assert_eq!(paths(&index, mark), Vec::<String>::new(), "{mark}");
    }
    // A link that stays inside is followed. (A link and its target hold the same text, so their
    // scores tie and their order is the index's: compared sorted.)
    assert_eq!(sorted(paths(&index, "insidemark")), ["inner-link/main.rs", "src/main.rs"]);

    // Opting in, per path.
    let opted = UpdateOptions {
        config: IndexConfig {
            outside_links: vec!["linked".into()],
            secret_exceptions: sift_indexer::SecretPatterns::new(&[".env"]).unwrap(),
            ..IndexConfig::default()
        },
        ..opts()
    };
    let report = index.update(&opted, &NoProgress).unwrap();
    index.reload().unwrap();
    assert_eq!(report.skipped.outside_links, 1, "creds-link.txt is still out: {report:?}");
    assert_eq!(paths(&index, "outsidemark"), ["linked/creds.txt"]);
    assert_eq!(sorted(paths(&index, "dotenvmark")), [".env", "env-link.txt"]);
    assert_eq!(paths(&index, "pemmark"), Vec::<String>::new());

    // And back: the opted-in files leave the index when the opt-in goes.
    index.update(&opts(), &NoProgress).unwrap();
    index.reload().unwrap();
    assert_eq!(paths(&index, "outsidemark"), Vec::<String>::new());
    assert_eq!(paths(&index, "dotenvmark"), Vec::<String>::new());
}

#[test]
fn sift_dir_gets_a_gitignore_that_keeps_caches_out() {
    let dir = sample_tree();
    update(dir.path());
    let gitignore = std::fs::read_to_string(dir.path().join(".sift/.gitignore")).unwrap();
    assert!(gitignore.lines().any(|l| l == "/index/"), "{gitignore}");
    let patterns: Vec<&str> = gitignore.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(!patterns.iter().any(|p| p.contains("config") || p.contains("memory")), "{gitignore}");
}

#[test]
fn an_older_format_is_rebuilt_with_a_notice_and_a_newer_one_refused() {
    let dir = sample_tree();
    let root = dir.path();
    update(root);
    let marker = root.join(".sift/index/sift-index.json");
    std::fs::write(&marker, r#"{"format":0}"#).unwrap();
    assert!(open(root).unwrap().is_none(), "an outdated index is not read");
    let (index, notice) = open_or_create(root).unwrap();
    assert_eq!(notice, Some(OpenNotice::Rebuilt { old_format: 0 }));
    let report = index.update(&opts(), &NoProgress).unwrap();
    assert_eq!(report.added, 4);

    std::fs::write(&marker, r#"{"format":999}"#).unwrap();
    let err = open_or_create(root).err().unwrap();
    assert!(matches!(err, Error::NewerFormat { found: 999, .. }), "{err}");
}

#[test]
fn foreign_and_corrupt_sift_dirs_are_refused_not_clobbered() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.rs", "fn a() {}\n");

    std::fs::write(root.join(".sift"), "not a dir").unwrap();
    let err = open_or_create(root).err().unwrap().to_string();
    assert!(err.contains("not a directory"), "{err}");
    std::fs::remove_file(root.join(".sift")).unwrap();

    write(root, ".sift/other-tool.db", "x");
    let err = open_or_create(root).err().unwrap().to_string();
    assert!(err.contains("other-tool.db"), "{err}");
    assert!(root.join(".sift/other-tool.db").exists());
    std::fs::remove_file(root.join(".sift/other-tool.db")).unwrap();

    write(root, ".sift/index/data.bin", "x");
    let err = open_or_create(root).err().unwrap();
    assert!(matches!(err, Error::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("--rebuild"), "{err}");
    // --rebuild replaces it.
    let index = rebuild(root).unwrap();
    index.update(&opts(), &NoProgress).unwrap();
    assert_eq!(paths(&index, "a"), ["a.rs"]);

    std::fs::write(root.join(".sift/index/meta.json"), "{ garbage").unwrap();
    let err = open(root).err().unwrap();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("--rebuild"), "{err}");
}

#[test]
fn unknown_entries_in_sifts_own_folder_are_reported_and_left_alone() {
    // What a newer sift (or a person) may add to a folder this sift made.
    let dir = sample_tree();
    let root = dir.path();
    update(root);
    write(root, ".sift/memory-v2/note.md", "remember this\n");
    write(root, ".sift/plugins.db", "x");
    let opened = store(root).unwrap();
    assert_eq!(opened.unknown(), ["memory-v2", "plugins.db"]);
    let (index, notice) = CodeIndex::open_or_create(&opened).unwrap();
    assert_eq!(notice, None, "the index is reused, not rebuilt");
    index.update(&opts(), &NoProgress).unwrap();
    assert_eq!(paths(&index, "load_settings")[0], "src/lib.rs");
    assert!(
        root.join(".sift/memory-v2/note.md").is_file() && root.join(".sift/plugins.db").is_file()
    );
    let gitignore = std::fs::read_to_string(root.join(".sift/.gitignore")).unwrap();
    assert!(!gitignore.contains("memory") && !gitignore.contains("plugins"), "{gitignore}");
    // sift's marker is its index's format file too: without the .gitignore, still sift's.
    std::fs::remove_file(root.join(".sift/.gitignore")).unwrap();
    assert_eq!(store(root).unwrap().unknown(), ["memory-v2", "plugins.db"]);
    // Without any marker, the same entries say the folder is someone else's.
    std::fs::remove_dir_all(root.join(".sift/index")).unwrap();
    let err = open_or_create(root).err().unwrap();
    assert!(matches!(err, Error::Foreign { .. }), "{err}");
    assert!(!root.join(".sift/index").exists(), "nothing written into it");
}

#[test]
fn missing_and_non_directory_roots_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = open_or_create(&missing).err().unwrap();
    assert!(matches!(err, Error::MissingPath(_)), "{err}");
    write(dir.path(), "file.rs", "x");
    let err = open_or_create(&dir.path().join("file.rs")).err().unwrap();
    assert!(matches!(err, Error::NotADirectory(_)), "{err}");
    assert!(!dir.path().join("nope").exists(), "nothing is created for a missing path");
}

#[test]
fn per_file_limit_spreads_results() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut many = String::new();
    for i in 0..6 {
        many.push_str(&format!("fn widget_{i}() {{ widget(); }}\n\n"));
    }
    write(root, "many.rs", many);
    write(root, "one.rs", "fn widget() {}\n");
    let (index, _) = update(root);
    let hits = index
        .search("widget", &SearchOptions { max_per_file: Some(1), ..SearchOptions::top(3) })
        .unwrap();
    let files: Vec<_> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(files.len(), 2);
    assert!(files.contains(&"many.rs") && files.contains(&"one.rs"));
}

#[test]
fn queries_without_words_are_refused() {
    let dir = sample_tree();
    let (index, _) = update(dir.path());
    let err = index.search(" -> {} ", &SearchOptions::default()).err().unwrap();
    assert!(matches!(err, Error::EmptyQuery(_)), "{err}");
}

#[test]
fn targeted_updates_look_only_at_the_named_files_with_the_same_rules() {
    let dir = sample_tree();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    write(&root, ".gitignore", "build/\n*.tmp\n");
    let (index, _) = update(&root);
    let abs = |rel: &str| root.join(rel);

    // A changed file, a new file, a deleted file, an ignored file, a file in an ignored folder.
    write(&root, "app/views.py", "def targetedword():\n    return 2\n");
    write(&root, "src/new.rs", "fn freshword() {}\n");
    std::fs::remove_file(root.join("README.md")).unwrap();
    write(&root, "notes.tmp", "ignoredword\n");
    write(&root, "build/out.rs", "fn builtword() {}\n");
    // A file changed on disk but not named: a targeted update must not see it.
    write(&root, "src/lib.rs", "fn unnamedword() {}\n");
    let named = ["app/views.py", "src/new.rs", "README.md", "notes.tmp", "build/out.rs"].map(abs);
    let report = index.update_paths(&named, &opts(), &NoProgress).unwrap();
    assert_eq!((report.added, report.changed, report.removed), (1, 1, 1), "{report:?}");
    assert_eq!(paths(&index, "targetedword"), ["app/views.py"]);
    assert_eq!(paths(&index, "freshword"), ["src/new.rs"]);
    assert_eq!(paths(&index, "demo"), Vec::<String>::new());
    assert_eq!(paths(&index, "ignoredword"), Vec::<String>::new());
    assert_eq!(paths(&index, "builtword"), Vec::<String>::new());
    assert_eq!(paths(&index, "unnamedword"), Vec::<String>::new());
    assert_eq!(report.files_total, 5, "the rest of the manifest is kept: {report:?}");

    // A full update then finds the unnamed change and nothing else to do.
    let report = index.update(&opts(), &NoProgress).unwrap();
    assert_eq!((report.added, report.changed, report.removed), (0, 1, 0), "{report:?}");

    // A folder that vanished falls back to a full walk and removes its files.
    std::fs::remove_dir_all(root.join("app")).unwrap();
    let report = index.update_paths(&[abs("app")], &opts(), &NoProgress).unwrap();
    assert_eq!(report.removed, 1, "{report:?}");
}

#[test]
fn updates_keep_the_definitions_they_parsed_only_when_asked_and_only_for_that_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "m.py", "class A:\n    def f(self):\n        return 1\n");
    write(root, "n.py", "def g():\n    return 2\n");
    let (index, _) = open_or_create(root).unwrap();
    index.update(&opts(), &NoProgress).unwrap();
    let text = std::fs::read_to_string(root.join("m.py")).unwrap();
    assert!(index.definitions_of("m.py", &text).is_none(), "off by default");

    index.keep_definitions(true);
    let edited = "class A:\n    def f(self):\n        return 3\n";
    write(root, "m.py", edited);
    index.update_paths(&[root.join("m.py")], &opts(), &NoProgress).unwrap();
    let defs = index.definitions_of("m.py", edited).expect("kept for the file it indexed");
    let named: Vec<String> = defs
        .iter()
        .map(|c| format!("{:?}.{:?} {}-{}", c.container, c.symbol, c.start_row, c.end_row))
        .collect();
    assert_eq!(named, ["None.Some(\"A\") 0-2", "Some(\"A\").Some(\"f\") 1-2"], "{named:?}");
    assert!(index.definitions_of("m.py", "class A: pass\n").is_none(), "another text");
    assert!(index.definitions_of("n.py", "def g():\n    return 2\n").is_none(), "not indexed");
    index.keep_definitions(false);
    assert!(index.definitions_of("m.py", edited).is_none(), "dropped when turned off");
}
