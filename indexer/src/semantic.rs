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
use crate::search::{Hit, SearchOptions, hit_from_doc};
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
        let mut per_file = HashMap::<String, usize>::new();
        let mut hits = Vec::with_capacity(opts.k);
        // Filtering needs the document; fetch a few times k and widen when that is not enough.
        let mut depth = opts.k.max(1) * 4;
        loop {
            let top = vectors.search(query_vec, depth, &|_| true);
            let exhausted = top.len() < depth;
            hits.clear();
            per_file.clear();
            for (score, addr) in top {
                let doc: TantivyDocument =
                    searcher.doc(addr).map_err(|e| Error::tantivy(where_, e))?;
                let path = doc.get_first(f.path).and_then(|v| v.as_str()).unwrap_or_default();
                if skip(path) {
                    continue;
                }
                if let Some(max) = opts.max_per_file {
                    let n = per_file.entry(path.to_string()).or_default();
                    if *n >= max {
                        continue;
                    }
                    *n += 1;
                }
                hits.push(hit_from_doc(f, &doc, score, &wanted));
                if hits.len() == opts.k {
                    return Ok(hits);
                }
            }
            if exhausted || depth >= 1 << 16 {
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
        Ok(fuse(lexical, semantic, opts, fusion))
    }
}

/// How hybrid search fuses the two rankings: a chunk at rank `r` (0-based) of a list scores
/// `weight / (k + r + 1)` from it, and the scores of both lists add up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The rank constant: larger flattens the difference between top and lower ranks.
    pub k: f32,
    /// Weight of the lexical ranking.
    pub lexical: f32,
    /// Weight of the semantic ranking.
    pub semantic: f32,
    /// How deep each ranking is read.
    pub depth: usize,
}

impl Default for Fusion {
    /// Tuned on the eval sets in `bench/eval/` (see the README's search quality table).
    fn default() -> Self {
        Fusion { k: 60.0, lexical: 1.0, semantic: 1.0, depth: 50 }
    }
}

/// Reciprocal-rank fusion of two hit lists (the same chunk is the same path and start line);
/// best first, with `opts`' per-file limit and `k`.
pub fn fuse(
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    opts: &SearchOptions,
    fusion: &Fusion,
) -> Vec<Hit> {
    let mut scores: HashMap<(String, u64), (f32, usize)> = HashMap::new();
    let mut all: Vec<Hit> = Vec::with_capacity(lexical.len() + semantic.len());
    for (weight, list) in [(fusion.lexical, lexical), (fusion.semantic, semantic)] {
        for (rank, hit) in list.into_iter().enumerate() {
            let add = weight / (fusion.k + rank as f32 + 1.0);
            let key = (hit.path.clone(), hit.start_line);
            match scores.get_mut(&key) {
                Some((score, _)) => *score += add,
                None => {
                    scores.insert(key, (add, all.len()));
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

    fn order(hits: &[Hit]) -> Vec<(&str, u64)> {
        hits.iter().map(|h| (h.path.as_str(), h.start_line)).collect()
    }

    #[test]
    fn a_chunk_in_both_lists_beats_chunks_in_one() {
        let lexical = vec![hit("a", 1), hit("b", 1), hit("c", 1)];
        let semantic = vec![hit("d", 1), hit("c", 1), hit("e", 1)];
        let opts = SearchOptions { k: 10, max_per_file: None };
        let fused = fuse(lexical, semantic, &opts, &Fusion::default());
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
        let fusion = Fusion { semantic: 2.0, ..Fusion::default() };
        assert_eq!(order(&fuse(lexical, semantic, &opts, &fusion)), [("b", 1), ("a", 1)]);
    }

    #[test]
    fn per_file_limit_and_k_apply_after_fusion() {
        let lexical = vec![hit("a", 1), hit("a", 9), hit("b", 1)];
        let semantic = vec![hit("a", 9), hit("a", 20), hit("c", 1)];
        let opts = SearchOptions { k: 2, max_per_file: Some(1) };
        let fused = fuse(lexical, semantic, &opts, &Fusion::default());
        assert_eq!(order(&fused), [("a", 9), ("b", 1)]);
    }
}
