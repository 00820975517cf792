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
    let mut files: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("app{}/mod{i}.py", i % 20),
                format!("def compute_{i}(x):\n    return x * {i} + offset(x)\n"),
            )
        })
        .collect();
    files.extend((0..10).map(|i| {
        (
            format!("pkg{i}/helpers.py"),
            format!(
                "def unsaved_helper_{i}(value):\n    \"\"\"A helper that keeps unsaved helper state.\"\"\"\n    return helper_state(value, {i})\n"
            ),
        )
    }));
    files.push((
        "core/retry.py".into(),
        "def backoff_delay(attempt):\n    return min(60, 2 ** attempt)\n".into(),
    ));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    workspace_of(&files)
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

/// A workspace over `files`, fully embedded with the bag-of-words model.
fn workspace_of(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        write(dir.path(), rel, text);
    }
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

#[test]
fn each_file_is_one_result_placed_by_its_best_chunk_with_its_other_chunks_after_it() {
    // One file holds six chunks that match the query; four others one each.
    let mut big = String::new();
    for i in 0..6 {
        big.push_str(&format!(
            "def cache_entry_{i}(key):\n    \"\"\"Expire the cache entry for key.\"\"\"\n    return expire_cache(key, {i})\n\n\n"
        ));
    }
    let small: Vec<(String, String)> = (0..4)
        .map(|i| {
            (
                format!("other/m{i}.py"),
                format!("def handler_{i}(request):\n    return expire_cache(request.key)\n"),
            )
        })
        .collect();
    let mut files: Vec<(&str, &str)> = vec![("store/cache.py", &big)];
    files.extend(small.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let (_dir, ws) = workspace_of(&files);
    for mode in [Mode::Lexical, Mode::Semantic, Mode::Hybrid] {
        let query = "expire cache entry";
        let chunks =
            search(&[&ws], &Query { mode: Some(mode), ..Query::chunks(query, 5) }).unwrap();
        let paths: Vec<&str> = chunks.hits.iter().map(|f| f.hit.path.as_str()).collect();
        // The problem: chunk by chunk, one file fills the list.
        assert!(
            paths.iter().filter(|p| **p == "store/cache.py").count() >= 3,
            "{mode:?} {paths:?}"
        );
        let files = search(&[&ws], &Query { mode: Some(mode), ..Query::new(query, 5) }).unwrap();
        let order: Vec<&str> = files.hits.iter().map(|f| f.hit.path.as_str()).collect();
        assert_eq!(order.len(), 5, "{mode:?} {order:?}");
        let distinct: std::collections::HashSet<&&str> = order.iter().collect();
        assert_eq!(distinct.len(), 5, "each file once: {mode:?} {order:?}");
        // The file's place is its best chunk's, and that chunk is the one shown.
        assert_eq!(order[0], paths[0], "{mode:?}");
        assert_eq!(files.hits[0].hit.start_line, chunks.hits[0].hit.start_line, "{mode:?}");
        let cache = files.hits.iter().find(|f| f.hit.path == "store/cache.py").unwrap();
        assert_eq!(cache.more.len(), 5, "its other five chunks come along: {mode:?}");
        assert!(
            cache.more.iter().all(|h| h.path == "store/cache.py" && h.score <= cache.hit.score)
        );
        assert!(cache.more.windows(2).all(|w| w[0].score >= w[1].score), "best first");
        // The same files, in the same order, as at most one chunk per file.
        let one = Query { mode: Some(mode), max_per_file: Some(1), ..Query::chunks(query, 5) };
        let one: Vec<String> =
            search(&[&ws], &one).unwrap().hits.into_iter().map(|f| f.hit.path).collect();
        assert_eq!(one, order, "{mode:?}");
    }
}

#[test]
fn questions_leave_translation_catalogs_aside_and_lookups_lexical_search_and_naming_them_keep_them()
{
    let catalog = "#: contrib/auth/forms.py:120\nmsgid \"Your password reset link has expired, request a new password reset\"\nmsgstr \"Ihr Link ist abgelaufen\"\n\n#: contrib/auth/forms.py:140\nmsgid \"password reset password reset email\"\nmsgstr \"Passwort\"\n";
    let files = [
        ("conf/locale/de/LC_MESSAGES/django.po", catalog),
        ("conf/locale/nl/LC_MESSAGES/django.po", catalog),
        (
            "auth/tokens.py",
            "def check_token(user, token):\n    \"\"\"Whether a password reset token is still valid or has expired.\"\"\"\n    return token_valid(user, token)\n",
        ),
        (
            "auth/views.py",
            "def password_reset_view(request):\n    return send_reset_email(request)\n",
        ),
    ];
    let (_dir, ws) = workspace_of(&files);
    let paths = |q: &Query<'_>| -> Vec<String> {
        search(&[&ws], q).unwrap().hits.into_iter().map(|f| f.hit.path).collect()
    };
    let question = "password reset link has expired";
    let catalog_in = |p: &[String]| p.iter().any(|p| p.ends_with("django.po"));
    let everything =
        Query { leave_aside: Some(sift_indexer::Asides::NONE), ..Query::new(question, 4) };
    assert!(
        catalog_in(&paths(&everything)),
        "the fixture shows the catalogs: {:?}",
        paths(&everything)
    );
    for mode in [Mode::Semantic, Mode::Hybrid] {
        let found = paths(&Query { mode: Some(mode), ..Query::new(question, 4) });
        assert!(!catalog_in(&found), "{mode:?}: {found:?}");
        assert!(found.iter().any(|p| p == "auth/tokens.py"), "{mode:?}: {found:?}");
    }
    // Lexical search, a lookup of an identifier and a question that names catalogs keep them.
    let lexical = paths(&Query { mode: Some(Mode::Lexical), ..Query::new(question, 4) });
    assert!(catalog_in(&lexical), "{lexical:?}");
    assert!(catalog_in(&paths(&Query::new("LC_MESSAGES password reset", 4))));
    let named = paths(&Query::new("German translation of password reset expired", 4));
    assert!(catalog_in(&named), "{named:?}");
    // Words that only a catalog holds ask for it.
    let german =
        paths(&Query { mode: Some(Mode::Hybrid), ..Query::new("Ihr Link ist abgelaufen", 4) });
    assert!(german[0].ends_with("django.po"), "{german:?}");
    // The JSON contract names the kind.
    let hit = search(&[&ws], &Query { mode: Some(Mode::Lexical), ..Query::new("Passwort", 1) })
        .unwrap()
        .hits
        .remove(0)
        .hit;
    assert_eq!(serde_json::to_value(&hit).unwrap()["aside"], "translation");
    // `[search] leave_aside = []`: the workspace ranks everything alike.
    let ws = ws.with_leave_aside(sift_indexer::Asides::NONE);
    let found =
        search(&[&ws], &Query { mode: Some(Mode::Semantic), ..Query::new(question, 4) }).unwrap();
    assert!(found.hits.iter().any(|f| f.hit.path.ends_with("django.po")));
}
