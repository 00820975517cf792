//! Hybrid search on a real temporary tree with a deterministic bag-of-words embedder: the
//! semantic ranking, the similarity lookup fusion uses for lexical hits, and the corpus floor
//! agree with each other.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use sift_indexer::{
    CodeIndex, Embedder, Fusion, NoProgress, SearchOptions, TextKind, UpdateOptions,
};
use sift_test_support::WordsEmbedder as Words;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.py", "def compress_body(response):\n    return gzip(response.body)\n");
    write(root, "b.py", "def frame_options(response):\n    response['X-Frame-Options'] = 'DENY'\n");
    write(root, "c.py", "def slugify(value):\n    return value.lower().replace(' ', '-')\n");
    write(root, "d.py", "def paginate(items, size):\n    return items[:size]\n");
    write(root, "e.py", "def send_mail(to, body):\n    smtp.send(to, body)\n");
    dir
}

#[test]
fn the_similarity_lookup_agrees_with_the_semantic_ranking() {
    let dir = tree();
    let store = sift_indexer::Store::open(dir.path(), &[sift_indexer::STORE_ENTRIES]).unwrap();
    let (index, _) = CodeIndex::open_or_create(&store).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    index
        .embed_missing(&Words, sift_indexer::Scope::All, 16, &NoProgress, &AtomicBool::new(false))
        .unwrap();
    let store = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&store).unwrap();
    let query = "compress the response body";
    let qv = Words.embed(&[query], TextKind::Query).unwrap().remove(0);
    let sims = vectors.similarities(&qv);
    let opts = SearchOptions::top(10);
    let semantic = index.semantic_hits(&sims, &query.into(), &opts, &|_| false).unwrap();
    assert_eq!(semantic.len(), 5);
    assert_eq!(semantic[0].path, "a.py");
    for hit in &semantic {
        let key = hit.key.expect("hits carry their chunk key");
        assert_eq!(sims.of_key(key), Some(hit.score), "{}", hit.path);
    }
    // The floor runs from the least to the most similar chunk.
    let (low, high) = (sims.quantile(0.0), sims.quantile(1.0));
    assert_eq!(high, semantic[0].score);
    assert_eq!(low, semantic[4].score);
    assert!(low <= sims.quantile(0.5) && sims.quantile(0.5) <= high);
    // Lexical hits carry keys too, so fusion can look their similarity up.
    let lexical = index.search("slugify", &opts).unwrap();
    assert_eq!(lexical[0].path, "c.py");
    assert!(sims.of_key(lexical[0].key.unwrap()).is_some());
    // Hybrid: the chunk both rankings put first answers.
    let fused = sift_indexer::Sources::new(&index, None)
        .hybrid(&vectors, &query.into(), &qv, &opts, &Fusion::default())
        .unwrap();
    assert_eq!(fused[0].path, "a.py");
    // A key the index does not hold has no similarity.
    assert_eq!(sims.of_key(u64::MAX - 1), None);
}

#[test]
fn a_pass_without_translations_leaves_them_out_but_counts_them_covered() {
    let dir = tree();
    let root = dir.path();
    // A gettext catalog (text under locale/), and code under a locale-named package, which is
    // not a translation and must still get a vector.
    write(
        root,
        "locale/de/LC_MESSAGES/django.po",
        "msgid \"compress the response body\"\nmsgstr \"den Antworttext komprimieren\"\n",
    );
    write(root, "app/locale/formats.py", "def compress_format(response):\n    return response\n");
    let store = sift_indexer::Store::open(root, &[sift_indexer::STORE_ENTRIES]).unwrap();
    let (index, _) = CodeIndex::open_or_create(&store).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    let stop = AtomicBool::new(false);
    let report =
        index.embed_missing(&Words, sift_indexer::Scope::NoAside, 16, &NoProgress, &stop).unwrap();
    assert_eq!(report.left_out, 1, "{report:?}");
    assert_eq!(report.embedded, 6, "{report:?}");
    assert_eq!(report.with_vectors, report.chunks, "left-out chunks count as covered: {report:?}");
    assert!(!report.interrupted);

    let vstore = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&vstore).unwrap();
    assert_eq!(vectors.coverage(), (7, 7));
    let query = "compress the response body";
    let qv = Words.embed(&[query], TextKind::Query).unwrap().remove(0);
    let sims = vectors.similarities(&qv);
    let opts = SearchOptions::top(10);
    let semantic = index.semantic_hits(&sims, &query.into(), &opts, &|_| false).unwrap();
    let paths: Vec<&str> = semantic.iter().map(|h| h.path.as_str()).collect();
    assert!(!paths.contains(&"locale/de/LC_MESSAGES/django.po"), "{paths:?}");
    assert!(paths.contains(&"app/locale/formats.py"), "{paths:?}");
    // Lexical search still finds the catalog by its words.
    let lexical = index.search("Antworttext", &opts).unwrap();
    assert_eq!(lexical[0].path, "locale/de/LC_MESSAGES/django.po");

    // A second pass of the same scope has nothing left to do: the mark is stored.
    let again =
        index.embed_missing(&Words, sift_indexer::Scope::NoAside, 16, &NoProgress, &stop).unwrap();
    assert_eq!((again.embedded, again.left_out), (0, 0), "{again:?}");

    // The same model made the main one (`[embed] model`, upgrade off) embeds everything: the
    // catalog's mark gives way to its vector, in memory and in the file.
    let all =
        index.embed_missing(&Words, sift_indexer::Scope::All, 16, &NoProgress, &stop).unwrap();
    assert_eq!((all.embedded, all.left_out), (1, 0), "{all:?}");
    let vstore = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&vstore).unwrap();
    assert_eq!(vectors.coverage(), (7, 7));
    let sims = vectors.similarities(&qv);
    let semantic = index.semantic_hits(&sims, &query.into(), &opts, &|_| false).unwrap();
    let paths: Vec<&str> = semantic.iter().map(|h| h.path.as_str()).collect();
    assert!(paths.contains(&"locale/de/LC_MESSAGES/django.po"), "{paths:?}");
    let after = index.embed_missing(&Words, sift_indexer::Scope::All, 16, &NoProgress, &stop);
    assert_eq!(after.unwrap().embedded, 0, "the vector replaced the mark for good");
}

#[test]
fn only_text_under_a_translations_directory_is_a_translation() {
    use sift_indexer::embed::is_translation;
    assert!(is_translation("django/conf/locale/de/LC_MESSAGES/django.po", "text"));
    assert!(is_translation("web/i18n/fr.json", "json"));
    assert!(!is_translation("django/conf/locale/de/formats.py", "python"));
    assert!(!is_translation("docs/localed.txt", "text"));
    assert!(!is_translation("README.md", "markdown"));
}

/// The answer to [`SQLITE_QUERY`]: a file whose path says "sqlite" and whose chunks each say
/// part of the rest.
const SQLITE_BASE: &str = "def convert_query(sql):\n    # pyformat placeholders become qmark ones\n    \
    return sql\n\n\ndef execute(cursor, sql, params):\n    # named parameters\n    \
    return cursor.run(sql)\n\n\ndef features():\n    # what is supported\n    return {}\n";

const SQLITE_QUERY: &str = "pyformat parameters supported on sqlite backends";

/// An indexed and embedded tree with `backends/sqlite/base.py` as `base` on disk, beside a
/// file with one chunk that matches one of [`SQLITE_QUERY`]'s words better than any chunk of
/// [`SQLITE_BASE`].
fn sqlite_tree(base: &str) -> (tempfile::TempDir, CodeIndex) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "backends/sqlite/base.py", base);
    write(
        root,
        "utils/text.py",
        "def pyformat_style(text):\n    # the pyformat style: pyformat\n    return text\n",
    );
    write(root, "c.py", "def slugify(value):\n    return value.lower().replace(' ', '-')\n");
    let store = sift_indexer::Store::open(root, &[sift_indexer::STORE_ENTRIES]).unwrap();
    let (index, _) = CodeIndex::open_or_create(&store).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    index
        .embed_missing(&Words, sift_indexer::Scope::All, 16, &NoProgress, &AtomicBool::new(false))
        .unwrap();
    (dir, index)
}

#[test]
fn a_file_whose_chunks_and_path_together_answer_leads_with_the_file_score() {
    let (_dir, index) = sqlite_tree(SQLITE_BASE);
    let vstore = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&vstore).unwrap();
    let qv = Words.embed(&[SQLITE_QUERY], TextKind::Query).unwrap().remove(0);
    let opts = SearchOptions::top(5);
    let sources = sift_indexer::Sources::new(&index, None);
    let first = |fusion: &Fusion| {
        sources.hybrid(&vectors, &SQLITE_QUERY.into(), &qv, &opts, fusion).unwrap()[0].path.clone()
    };
    let without = Fusion { file_weight: 0.0, routed_file_weight: 0.0, ..Fusion::default() };
    assert_eq!(first(&without), "utils/text.py", "chunk by chunk, the one-chunk file leads");
    assert_eq!(first(&Fusion::default()), "backends/sqlite/base.py");
    // Lexical search alone keeps its chunk-level order.
    assert_eq!(index.search(SQLITE_QUERY, &opts).unwrap()[0].path, "utils/text.py");
}

#[test]
fn the_file_score_of_a_file_open_in_the_editor_comes_from_its_unsaved_text() {
    // On disk the file says none of the query; the editor's buffer says it all.
    let (_dir, index) = sqlite_tree("def convert_query(sql):\n    return sql\n");
    let vstore = index.vector_store(&Words).unwrap();
    let vectors = index.vector_index(&vstore).unwrap();
    let mut overlay = sift_indexer::Overlay::new().unwrap();
    overlay.set("backends/sqlite/base.py", SQLITE_BASE).unwrap();
    overlay.embed_missing(&Words, &|_| false).unwrap();
    let qv = Words.embed(&[SQLITE_QUERY], TextKind::Query).unwrap().remove(0);
    let opts = SearchOptions::top(5);
    let sources = sift_indexer::Sources::new(&index, Some(&overlay));
    let without = Fusion { file_weight: 0.0, routed_file_weight: 0.0, ..Fusion::default() };
    let plain = sources.hybrid(&vectors, &SQLITE_QUERY.into(), &qv, &opts, &without).unwrap();
    assert_eq!(plain[0].path, "utils/text.py");
    let hits =
        sources.hybrid(&vectors, &SQLITE_QUERY.into(), &qv, &opts, &Fusion::default()).unwrap();
    assert_eq!((hits[0].path.as_str(), hits[0].unsaved), ("backends/sqlite/base.py", true));
    // The saved file alone is not lifted.
    let saved = sift_indexer::Sources::new(&index, None);
    let hits =
        saved.hybrid(&vectors, &SQLITE_QUERY.into(), &qv, &opts, &Fusion::default()).unwrap();
    assert_eq!(hits[0].path, "utils/text.py");
}
