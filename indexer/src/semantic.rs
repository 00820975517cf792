//! Filling the vector index, and semantic and hybrid search over it.
//!
//! Embedding never blocks lexical search: it runs after (or beside) lexical indexing, over the
//! chunks the lexical index already holds that have no vector yet, first-party code first, and
//! it can be stopped between batches and resumed later for free (the cache remembers every
//! vector it appended). Hybrid search fuses the lexical and the vector ranking with
//! reciprocal-rank fusion.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use tantivy::schema::Value;
use tantivy::{DocAddress, TantivyDocument};

use crate::embed::{Embedder, TextKind, embed_text, priority};
use crate::error::{Error, Result};
use crate::index::CodeIndex;
use crate::search::{Hit, SearchOptions, collect_hits};
use crate::update::Progress;
use crate::vectors::{VectorIndex, VectorStore, live_keys};

/// What [`CodeIndex::embed_missing`] did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EmbedReport {
    /// The model's id.
    pub model: String,
    /// Chunks embedded by this run.
    pub embedded: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// Chunks with a vector now.
    pub with_vectors: u64,
    /// True when the run was stopped before every chunk had a vector.
    pub interrupted: bool,
}

/// Chunks fetched from the index at a time; within such a window they are sorted by length so
/// that each model batch holds texts of similar length (less padding for transformers).
const WINDOW: usize = 512;

impl CodeIndex {
    /// The vector cache of `embedder`'s model for this repository (read-only until locked).
    pub fn vector_store(&self, embedder: &dyn Embedder) -> Result<VectorStore> {
        VectorStore::open(&self.layout, embedder.id(), embedder.dim())
    }

    /// The live chunks' vectors, for searching the index as it is now.
    pub fn vector_index(&self, store: &VectorStore) -> Result<VectorIndex> {
        VectorIndex::build(&self.reader.searcher(), store)
    }

    /// Embeds every chunk of the index that has no vector yet, `batch` texts per model call,
    /// best first (see [`crate::embed::priority`]). Stops between batches when `stop` becomes
    /// true; what was embedded until then is kept. Fails with [`Error::VectorsLocked`] when
    /// another process is embedding for the same model.
    pub fn embed_missing(
        &self,
        embedder: &dyn Embedder,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        let mut store = self.vector_store(embedder)?;
        self.embed_missing_in(&mut store, embedder, batch, progress, stop)
    }

    /// [`CodeIndex::embed_missing`] into a store the caller keeps (a server keeps one, so that
    /// it need not read the vectors back from disk after each run). The store's writer lock is
    /// held for the run and released at its end.
    pub fn embed_missing_in(
        &self,
        store: &mut VectorStore,
        embedder: &dyn Embedder,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        store.lock_for_writing()?;
        let result = self.embed_locked(store, embedder, batch, progress, stop);
        store.unlock();
        result
    }

    fn embed_locked(
        &self,
        store: &mut VectorStore,
        embedder: &dyn Embedder,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        self.reload()?;
        let searcher = self.reader.searcher();
        let live = live_keys(&searcher)?;
        let mut seen = HashSet::new();
        let mut missing: Vec<(u64, DocAddress)> =
            live.iter().filter(|(k, _)| !store.contains(*k) && seen.insert(*k)).copied().collect();
        let mut report = EmbedReport {
            model: embedder.id().to_string(),
            chunks: live.len() as u64,
            ..EmbedReport::default()
        };
        let f = &self.fields;
        let where_ = &self.layout.index_dir;
        let str_of = |doc: &TantivyDocument, field| {
            doc.get_first(field).and_then(|v| v.as_str()).map(str::to_string)
        };
        // Order by priority: a cheap pass over the path and language of each missing chunk.
        let mut keyed = Vec::with_capacity(missing.len());
        for (key, addr) in missing.drain(..) {
            let doc: TantivyDocument = searcher.doc(addr).map_err(|e| Error::tantivy(where_, e))?;
            let path = str_of(&doc, f.path).unwrap_or_default();
            let lang = str_of(&doc, f.lang).unwrap_or_default();
            keyed.push((priority(&path, &lang), path, key, addr));
        }
        keyed.sort();
        progress.phase("embedding", Some(keyed.len() as u64));
        let batch = batch.max(1);
        'windows: for window in keyed.chunks(WINDOW) {
            let mut texts = Vec::with_capacity(window.len());
            for (_, path, key, addr) in window {
                let doc: TantivyDocument =
                    searcher.doc(*addr).map_err(|e| Error::tantivy(where_, e))?;
                let content = doc.get_first(f.content).and_then(|v| v.as_str()).unwrap_or("");
                let text = embed_text(
                    path,
                    str_of(&doc, f.symbol).as_deref(),
                    str_of(&doc, f.container).as_deref(),
                    content,
                );
                texts.push((*key, text));
            }
            texts.sort_by_key(|(_, t)| t.len());
            for group in texts.chunks(batch) {
                if stop.load(Ordering::Relaxed) {
                    report.interrupted = true;
                    break 'windows;
                }
                let refs: Vec<&str> = group.iter().map(|(_, t)| t.as_str()).collect();
                let vectors = embedder
                    .embed(&refs, TextKind::Document)
                    .map_err(|e| Error::Embedding(e.to_string()))?;
                if vectors.len() != group.len() {
                    return Err(Error::Embedding(format!(
                        "the model gave {} vectors for {} texts",
                        vectors.len(),
                        group.len()
                    )));
                }
                let items: Vec<(u64, Vec<f32>)> =
                    group.iter().map(|(k, _)| *k).zip(vectors).collect();
                store.append(&items)?;
                report.embedded += items.len() as u64;
                progress.advance(items.len() as u64);
            }
        }
        if !report.interrupted {
            let live_set: HashSet<u64> = live.iter().map(|(k, _)| *k).collect();
            store.compact_if_worthwhile(&|k| live_set.contains(&k))?;
        }
        report.with_vectors = live.iter().filter(|(k, _)| store.contains(*k)).count() as u64;
        Ok(report)
    }

    /// The chunks most similar to `query_vec` (the embedding of `query`, which only picks the
    /// snippet lines), best first, leaving out files for which `skip` is true.
    pub fn search_semantic(
        &self,
        vectors: &VectorIndex,
        query: &str,
        query_vec: &[f32],
        opts: &SearchOptions,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Hit>> {
        let searcher = vectors.searcher();
        let f = &self.fields;
        let where_ = &self.layout.index_dir;
        let tokens = crate::tokenizer::tokenize(query);
        let wanted: HashSet<&str> = tokens.iter().map(String::as_str).collect();
        // Filtering needs the document; fetch a few times k and widen when that is not enough.
        let mut depth = opts.k.max(1) * 4;
        loop {
            let top = vectors.search(query_vec, depth);
            let exhausted = top.len() < depth;
            let hits = collect_hits(searcher, f, where_, top, opts, skip, &wanted)?;
            if hits.len() >= opts.k || exhausted || depth >= 1 << 16 {
                return Ok(hits);
            }
            depth *= 4;
        }
    }

    /// Lexical and semantic rankings fused with reciprocal-rank fusion (see [`Fusion`]). When
    /// the query has no words the lexical index can match, the semantic ranking alone answers.
    pub fn search_hybrid(
        &self,
        vectors: &VectorIndex,
        query: &str,
        query_vec: &[f32],
        opts: &SearchOptions,
        fusion: &Fusion,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Hit>> {
        let depth = SearchOptions { k: fusion.depth.max(opts.k), max_per_file: None };
        let lexical = match self.search_except(query, &depth, skip) {
            Ok(hits) => hits,
            Err(Error::EmptyQuery(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        let semantic = self.search_semantic(vectors, query, query_vec, &depth, skip)?;
        Ok(fuse(query, lexical, semantic, opts, fusion))
    }
}

/// How hybrid search fuses the two rankings.
///
/// With `alpha` unset: reciprocal-rank fusion, a chunk at rank `r` (0-based) of a list scores
/// `weight / (k + r + 1)` from it and the scores of both lists add up. With `alpha` set: a
/// convex combination of the scores themselves, each list's scores scaled to 0..1 by its best
/// (`alpha` × lexical + (1 − `alpha`) × semantic), which keeps a decisive lexical match (an
/// identifier) on top where rank fusion would let a merely similar chunk overtake it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The rank constant of RRF: larger flattens the difference between top and lower ranks.
    pub k: f32,
    /// Weight of the lexical ranking (RRF).
    pub lexical: f32,
    /// Weight of the semantic ranking (RRF).
    pub semantic: f32,
    /// How deep each ranking is read.
    pub depth: usize,
    /// Convex combination weight of the lexical scores (`None`: RRF).
    pub alpha: Option<f32>,
    /// When the query names identifiers, keep the lexical order and let the semantic ranking
    /// only add chunks after it.
    pub identifier_routing: bool,
}

impl Default for Fusion {
    /// Tuned on the eval sets in `bench/eval/` (see the README's search quality table).
    fn default() -> Self {
        Fusion {
            k: 60.0,
            lexical: 1.0,
            semantic: 1.0,
            depth: 50,
            alpha: Some(0.5),
            identifier_routing: true,
        }
    }
}

/// Fuses two hit lists (the same chunk is the same path and start line); best first, with
/// `opts`' per-file limit and `k`.
///
/// Symbol-name boost: a chunk that defines an identifier the query names (`bulk_create`,
/// `QuerySet`, spelled as an identifier: with `_`, or in camel case) goes before chunks that
/// merely resemble the query, and more so when its enclosing symbol is named too
/// (`LocaleMiddleware.process_response`). People who type an identifier want its definition.
pub fn fuse(
    query: &str,
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    opts: &SearchOptions,
    fusion: &Fusion,
) -> Vec<Hit> {
    let named = query_identifiers(query);
    if !named.is_empty() && fusion.identifier_routing {
        // The query names identifiers: lexical search is what finds them, and the semantic
        // ranking only adds chunks after the lexical ones (it cannot push a named definition
        // down).
        // Fused by rank alone (RRF over one list), so the appended hits' scores do not matter.
        let mut lexical = lexical;
        let seen: std::collections::HashSet<(String, u64)> =
            lexical.iter().map(|h| (h.path.clone(), h.start_line)).collect();
        lexical.extend(
            semantic.into_iter().filter(|h| !seen.contains(&(h.path.clone(), h.start_line))),
        );
        let lexical_only = Fusion { semantic: 0.0, alpha: None, ..*fusion };
        return fuse_scored(&named, lexical, Vec::new(), opts, &lexical_only);
    }
    fuse_scored(&named, lexical, semantic, opts, fusion)
}

fn fuse_scored(
    named: &[String],
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    opts: &SearchOptions,
    fusion: &Fusion,
) -> Vec<Hit> {
    let boost = |hit: &Hit| -> f32 {
        let is_named = |name: &Option<String>| {
            name.as_deref().is_some_and(|n| named.iter().any(|id| id.eq_ignore_ascii_case(n)))
        };
        if named.is_empty() || !is_named(&hit.symbol) {
            return 0.0;
        }
        if is_named(&hit.container) { 1.5 } else { 1.0 }
    };
    let mut scores: HashMap<(String, u64), (f32, usize)> = HashMap::new();
    let mut all: Vec<Hit> = Vec::with_capacity(lexical.len() + semantic.len());
    let scale = |list: &[Hit]| {
        let max = list.iter().map(|h| h.score).fold(f32::MIN, f32::max);
        let min = list.iter().map(|h| h.score).fold(f32::MAX, f32::min);
        (min, (max - min).max(1e-6))
    };
    let (lex_scale, sem_scale) = (scale(&lexical), scale(&semantic));
    for (which, list) in [(0, lexical), (1, semantic)] {
        for (rank, hit) in list.into_iter().enumerate() {
            let add = match fusion.alpha {
                None => {
                    let weight = if which == 0 { fusion.lexical } else { fusion.semantic };
                    weight / (fusion.k + rank as f32 + 1.0)
                }
                Some(alpha) => {
                    let ((min, span), w) =
                        if which == 0 { (lex_scale, alpha) } else { (sem_scale, 1.0 - alpha) };
                    w * (hit.score - min) / span
                }
            };
            let key = (hit.path.clone(), hit.start_line);
            match scores.get_mut(&key) {
                Some((score, _)) => *score += add,
                None => {
                    scores.insert(key, (add + boost(&hit), all.len()));
                    all.push(hit);
                }
            }
        }
    }
    let mut ranked: Vec<(f32, usize)> = scores.into_values().collect();
    // Ties go to the earlier (lexical-first) hit, so the order is deterministic.
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut per_file = HashMap::<String, usize>::new();
    let mut out = Vec::with_capacity(opts.k);
    let mut slots: Vec<Option<Hit>> = all.into_iter().map(Some).collect();
    for (score, i) in ranked {
        let Some(mut hit) = slots[i].take() else { continue };
        if let Some(max) = opts.max_per_file {
            let n = per_file.entry(hit.path.clone()).or_default();
            if *n >= max {
                continue;
            }
            *n += 1;
        }
        hit.score = score;
        out.push(hit);
        if out.len() == opts.k {
            break;
        }
    }
    out
}

/// The words of a query spelled as identifiers: containing `_`, or with a lower-to-upper case
/// change (`bulk_create`, `QuerySet`, `parseConfig`; `QuerySet.bulk_create` gives both).
pub fn query_identifiers(query: &str) -> Vec<String> {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| {
            let chars: Vec<char> = w.chars().collect();
            let inner_underscore = w.trim_matches('_').contains('_');
            let camel = chars.windows(2).any(|p| p[0].is_lowercase() && p[1].is_uppercase());
            w.len() > 2 && (inner_underscore || camel)
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, line: u64) -> Hit {
        Hit {
            path: path.into(),
            start_line: line,
            end_line: line,
            score: 0.0,
            symbol: None,
            kind: "function".into(),
            container: None,
            language: "rust".into(),
            match_line: line,
            snippet: String::new(),
        }
    }

    fn rrf() -> Fusion {
        Fusion { alpha: None, identifier_routing: false, ..Fusion::default() }
    }

    fn order(hits: &[Hit]) -> Vec<(&str, u64)> {
        hits.iter().map(|h| (h.path.as_str(), h.start_line)).collect()
    }

    #[test]
    fn a_chunk_in_both_lists_beats_chunks_in_one() {
        let lexical = vec![hit("a", 1), hit("b", 1), hit("c", 1)];
        let semantic = vec![hit("d", 1), hit("c", 1), hit("e", 1)];
        let opts = SearchOptions { k: 10, max_per_file: None };
        let fused = fuse("q", lexical, semantic, &opts, &rrf());
        assert_eq!(order(&fused)[0], ("c", 1));
        // c: 1/63 + 1/62; a and d: 1/61 each (tie: lexical first); then b, e.
        assert_eq!(order(&fused), [("c", 1), ("a", 1), ("d", 1), ("b", 1), ("e", 1)]);
        let c = 1.0 / 63.0 + 1.0 / 62.0;
        assert!((fused[0].score - c).abs() < 1e-6);
    }

    #[test]
    fn weights_tilt_the_fusion() {
        let lexical = vec![hit("a", 1)];
        let semantic = vec![hit("b", 1)];
        let opts = SearchOptions { k: 10, max_per_file: None };
        let fusion = Fusion { semantic: 2.0, ..rrf() };
        assert_eq!(order(&fuse("q", lexical, semantic, &opts, &fusion)), [("b", 1), ("a", 1)]);
    }

    #[test]
    fn per_file_limit_and_k_apply_after_fusion() {
        let lexical = vec![hit("a", 1), hit("a", 9), hit("b", 1)];
        let semantic = vec![hit("a", 9), hit("a", 20), hit("c", 1)];
        let opts = SearchOptions { k: 2, max_per_file: Some(1) };
        let fused = fuse("q", lexical, semantic, &opts, &rrf());
        assert_eq!(order(&fused), [("a", 9), ("b", 1)]);
    }

    #[test]
    fn identifiers_are_recognised_in_queries() {
        assert_eq!(
            query_identifiers("where is QuerySet.bulk_create implemented"),
            ["QuerySet", "bulk_create"]
        );
        assert_eq!(query_identifiers("parseConfig in __init__"), ["parseConfig"]);
        assert!(query_identifiers("where do we stop framing").is_empty());
    }

    #[test]
    fn a_named_definition_beats_similar_chunks_and_its_container_breaks_ties() {
        let mut def = hit("query.py", 100);
        def.symbol = Some("bulk_create".into());
        def.container = Some("QuerySet".into());
        let mut other = hit("manager.py", 5);
        other.symbol = Some("bulk_create".into());
        other.container = Some("Manager".into());
        let caller = hit("forms.py", 7);
        let opts = SearchOptions { k: 10, max_per_file: None };
        let lexical = vec![other.clone(), def.clone(), caller.clone()];
        let semantic = vec![caller.clone(), other.clone(), def.clone()];
        for fusion in
            [rrf(), Fusion::default(), Fusion { identifier_routing: false, ..Fusion::default() }]
        {
            let fused =
                fuse("QuerySet.bulk_create", lexical.clone(), semantic.clone(), &opts, &fusion);
            assert_eq!(order(&fused), [("query.py", 100), ("manager.py", 5), ("forms.py", 7)]);
        }
        // Without identifiers in the query, no boost: the chunk both rankings put first wins.
        let lexical = vec![caller.clone(), other, def];
        let fused = fuse("bulk create", lexical.clone(), semantic.clone(), &opts, &rrf());
        assert_eq!(order(&fused)[0], ("forms.py", 7));
        let fused = fuse("QuerySet.bulk_create", lexical, semantic, &opts, &rrf());
        assert_eq!(order(&fused)[0], ("query.py", 100));
    }
}
