//! The engine's one search over a real index with vectors (a deterministic bag-of-words
//! embedder) and unsaved buffers laid over it.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use sift_engine::embeddings::Semantic;
use sift_engine::{Mode, Query, Workspace, search};
use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::embed::{LoadedModel, ModelInfo, ModelKind};
use sift_test_support::WordsEmbedder as Words;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository where `helper` and `unsaved` are rare words concentrated in a few files (as
/// in Django's `helpers.py` files), indexed and fully embedded.
fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        write(
            dir.path(),
            &format!("app{}/mod{i}.py", i % 20),
            &format!("def compute_{i}(x):\n    return x * {i} + offset(x)\n"),
        );
    }
    for i in 0..10 {
        write(
            dir.path(),
            &format!("pkg{i}/helpers.py"),
            &format!(
                "def unsaved_helper_{i}(value):\n    \"\"\"A helper that keeps unsaved helper state.\"\"\"\n    return helper_state(value, {i})\n"
            ),
        );
    }
    write(
        dir.path(),
        "core/retry.py",
        "def backoff_delay(attempt):\n    return min(60, 2 ** attempt)\n",
    );
    let (index, _) =
        CodeIndex::open_or_create(&sift_engine::store::open(dir.path()).unwrap()).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    index
        .embed_missing(&Words, sift_indexer::Scope::All, 64, &NoProgress, &AtomicBool::new(false))
        .unwrap();
    let store = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&store).unwrap();
    let model = LoadedModel {
        embedder: Box::new(Words),
        info: ModelInfo {
            id: "test-words".into(),
            kind: ModelKind::Static,
            dim: 64,
            max_tokens: 512,
            source: String::new(),
        },
        dir: dir.path().to_path_buf(),
        device: None,
    };
    let ws = Workspace::new(index, Semantic::ready(model, vectors)).unwrap();
    (dir, ws)
}

fn first(ws: &Workspace, text: &str, mode: Option<Mode>) -> (String, bool) {
    let found = search(&[ws], &Query { mode, ..Query::new(text, 5) }).unwrap();
    let hit = &found.hits[0].hit;
    (hit.path.clone(), hit.unsaved)
}

#[test]
fn a_name_only_an_unsaved_buffer_holds_comes_first_in_every_mode() {
    let (_dir, ws) = workspace();
    let query = "qwzvbn_unsaved_helper";
    ws.set_unsaved("scratch/new.py", Some("def qwzvbn_unsaved_helper():\n    return 1\n")).unwrap();
    // The bug this guards against: scored alone, the buffer's BM25 (IDFs from one document)
    // is below the repository's own best score for the common words of the same query.
    let alone = ws.overlay().search(query, &Default::default()).unwrap()[0].score;
    let disk = ws.index.search(query, &Default::default()).unwrap()[0].score;
    assert!(alone < disk, "the fixture no longer shows the problem: {alone} >= {disk}");
    for mode in [None, Some(Mode::Lexical), Some(Mode::Hybrid)] {
        assert_eq!(first(&ws, query, mode), ("scratch/new.py".into(), true), "{mode:?}");
    }
    let found = search(&[&ws], &Query::new(query, 5)).unwrap();
    assert_eq!(found.mode, Mode::Hybrid);
    assert_eq!(found.fallback, None);
}

#[test]
fn unsaved_text_replaces_the_file_on_disk_in_both_rankings() {
    let (_dir, ws) = workspace();
    ws.set_unsaved(
        "core/retry.py",
        Some("def jitter_sleep(attempt):\n    return random() * attempt\n"),
    )
    .unwrap();
    // The saved text is gone from every ranking; the buffer's is found, by words and by meaning.
    for mode in [Mode::Lexical, Mode::Semantic, Mode::Hybrid] {
        let found =
            search(&[&ws], &Query { mode: Some(mode), ..Query::new("backoff_delay", 50) }).unwrap();
        assert!(
            found.hits.iter().all(|f| !f.hit.snippet.contains("backoff_delay")),
            "{mode:?}: {:?}",
            found.hits.iter().map(|f| &f.hit.path).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        first(&ws, "jitter sleep random attempt", Some(Mode::Semantic)),
        ("core/retry.py".into(), true)
    );
    // Closing the buffer brings the file on disk back.
    ws.set_unsaved("core/retry.py", None).unwrap();
    assert_eq!(first(&ws, "backoff_delay", Some(Mode::Lexical)), ("core/retry.py".into(), false));
}

#[test]
fn semantic_search_without_vectors_says_why_and_hybrid_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.py", "def parse_config(path):\n    return open(path).read()\n");
    let (index, _) =
        CodeIndex::open_or_create(&sift_engine::store::open(dir.path()).unwrap()).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    let ws = Workspace::new(index, Semantic::off("no embedding model")).unwrap();
    let err = search(&[&ws], &Query { mode: Some(Mode::Semantic), ..Query::new("config", 5) })
        .unwrap_err();
    assert_eq!(err.to_string(), "semantic search is not available: no embedding model");
    let found =
        search(&[&ws], &Query { mode: Some(Mode::Hybrid), ..Query::new("config", 5) }).unwrap();
    assert_eq!(
        (found.mode, found.fallback.as_deref()),
        (Mode::Lexical, Some("no embedding model"))
    );
    assert_eq!(found.hits[0].hit.path, "a.py");
    // A query without words is refused, whatever the mode but semantic.
    let err = search(&[&ws], &Query::new("  ()  ", 5)).unwrap_err();
    assert!(matches!(err, sift_engine::Error::Index(sift_indexer::Error::EmptyQuery(_))), "{err}");
}
