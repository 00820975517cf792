//! Filling the vector index, and semantic and hybrid search over it.
//!
//! Embedding never blocks lexical search: it runs after (or beside) lexical indexing, over the
//! chunks the lexical index already holds that have no vector yet, first-party code first, and
//! it can be stopped between batches and resumed later for free (the cache remembers every
//! vector it appended). Hybrid search ([`fuse`]) combines the lexical and the vector ranking;
//! [`crate::sources::Sources`] is what runs the searches.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use tantivy::schema::Value;
use tantivy::{DocAddress, TantivyDocument};

use crate::embed::{Embedder, Scope, embed_text, priority};
use crate::error::{Error, Result};
use crate::index::CodeIndex;
use crate::search::{Hit, Keep, SearchOptions, Terms, collect_hits, doc_aside};
use crate::update::Progress;
use crate::vectors::{Similarities, VectorIndex, VectorStore, live_keys};

/// A query's similarity to every chunk, as fusion needs it ([`Similarities`] in search).
pub trait CorpusSimilarity {
    /// The similarity of the chunk with this key, when it has a vector.
    fn of_key(&self, key: u64) -> Option<f32>;
    /// The similarity below which a share `q` (0..=1) of all chunks fall.
    fn quantile(&self, q: f32) -> f32;
}

impl CorpusSimilarity for Similarities<'_> {
    fn of_key(&self, key: u64) -> Option<f32> {
        Similarities::of_key(self, key)
    }

    fn quantile(&self, q: f32) -> f32 {
        Similarities::quantile(self, q)
    }
}

/// What [`CodeIndex::embed_missing`] did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct EmbedReport {
    /// The model's id.
    pub model: String,
    /// Chunks embedded by this run.
    pub embedded: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// Chunks with a vector now, or left out on purpose (see `left_out`).
    pub with_vectors: u64,
    /// Chunks this run marked as left out rather than embedding them ([`Scope::NoAside`]).
    pub left_out: u64,
    /// True when the run was stopped before every chunk had a vector.
    pub interrupted: bool,
}

/// Chunks fetched from the index at a time; within such a window they are sorted by length so
/// that each model batch holds texts of similar length (less padding for transformers).
const WINDOW: usize = 512;

impl CodeIndex {
    /// The vector cache of `embedder`'s model for this repository (read-only until locked).
    pub fn vector_store(&self, embedder: &dyn Embedder) -> Result<VectorStore> {
        self.vector_store_of(embedder.id(), embedder.dim())
    }

    /// The vector cache of the model whose [`Embedder::id`] and dimensions these are, without
    /// the model (to see what it covers before paying for loading it).
    pub fn vector_store_of(&self, id: &str, dim: usize) -> Result<VectorStore> {
        VectorStore::open(&self.layout, id, dim)
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
        scope: Scope,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        let mut store = self.vector_store(embedder)?;
        self.embed_missing_in(&mut store, embedder, scope, batch, progress, stop)
    }

    /// [`CodeIndex::embed_missing`] into a store the caller keeps (a server keeps one, so that
    /// it need not read the vectors back from disk after each run). The store's writer lock is
    /// held for the run and released at its end.
    pub fn embed_missing_in(
        &self,
        store: &mut VectorStore,
        embedder: &dyn Embedder,
        scope: Scope,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        store.lock_for_writing()?;
        let result = self.embed_locked(store, embedder, scope, batch, progress, stop);
        store.unlock();
        result
    }

    fn embed_locked(
        &self,
        store: &mut VectorStore,
        embedder: &dyn Embedder,
        scope: Scope,
        batch: usize,
        progress: &dyn Progress,
        stop: &AtomicBool,
    ) -> Result<EmbedReport> {
        self.reload()?;
        let searcher = self.reader.searcher();
        let live = live_keys(&searcher)?;
        let mut seen = HashSet::new();
        // A chunk an upgrade left out (a translation) is missing when this model embeds all.
        let done = |k: u64| store.contains(k) && !(scope == Scope::All && store.is_left_out(k));
        let mut missing: Vec<(u64, DocAddress)> =
            live.iter().filter(|(k, _)| !done(*k) && seen.insert(*k)).copied().collect();
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
        let mut left_out = Vec::new();
        for (key, addr) in missing.drain(..) {
            let doc: TantivyDocument = searcher.doc(addr).map_err(|e| Error::tantivy(where_, e))?;
            let path = str_of(&doc, f.path).unwrap_or_default();
            let lang = str_of(&doc, f.lang).unwrap_or_default();
            if scope == Scope::NoAside && doc_aside(f, &doc, &path).is_some() {
                left_out.push(key);
                continue;
            }
            keyed.push((priority(&path, &lang), path, key, addr));
        }
        store.leave_out(&left_out)?;
        report.left_out = left_out.len() as u64;
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
                let vectors = crate::embed::embed_documents(embedder, &refs)?;
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

    /// Every live chunk's embedding text as an embedding pass makes it (`scope` as in
    /// [`CodeIndex::embed_missing`]: chunks it leaves aside are not listed), with its cache
    /// key and path, in key order.
    pub fn embedding_texts(&self, scope: Scope) -> Result<Vec<EmbeddingText>> {
        self.reload()?;
        let searcher = self.reader.searcher();
        let f = &self.fields;
        let where_ = &self.layout.index_dir;
        let str_of = |doc: &TantivyDocument, field| {
            doc.get_first(field).and_then(|v| v.as_str()).map(str::to_string)
        };
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (key, addr) in live_keys(&searcher)? {
            if !seen.insert(key) {
                continue;
            }
            let doc: TantivyDocument = searcher.doc(addr).map_err(|e| Error::tantivy(where_, e))?;
            let path = str_of(&doc, f.path).unwrap_or_default();
            if scope == Scope::NoAside && doc_aside(f, &doc, &path).is_some() {
                continue;
            }
            let content = doc.get_first(f.content).and_then(|v| v.as_str()).unwrap_or("");
            let text = embed_text(
                &path,
                str_of(&doc, f.symbol).as_deref(),
                str_of(&doc, f.container).as_deref(),
                content,
            );
            out.push(EmbeddingText { key, path, text, content: content.to_owned() });
        }
        out.sort_by_key(|t| t.key);
        Ok(out)
    }

    /// The hits of a semantic ranking already computed (see [`VectorIndex::similarities`]),
    /// best first, leaving out files for which `skip` is true.
    pub fn semantic_hits(
        &self,
        sims: &Similarities<'_>,
        query: &Terms,
        opts: &SearchOptions,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Hit>> {
        let searcher = sims.searcher();
        let f = &self.fields;
        let where_ = &self.layout.index_dir;
        let wanted: HashSet<&str> = query.tokens().iter().map(String::as_str).collect();
        // Filtering needs the document; fetch a few times k (a list of files reads its pool)
        // and widen when that is not enough.
        let mut depth = if opts.files { opts.depth() } else { opts.k.max(1) * 4 };
        let map = self.aside_map(searcher, opts.leave_aside)?;
        let tokens: Vec<&str> = query.tokens().iter().map(String::as_str).collect();
        loop {
            let mut top = sims.top(depth);
            let exhausted = top.len() < depth;
            // What the file's path leaves aside is cut before its document is read.
            if let Some(map) = &map {
                top.retain(|(_, addr)| !map.leaves_out(*addr, opts.leave_aside, &tokens));
            }
            let (hits, satisfied) = collect_hits(searcher, f, where_, top, opts, skip, &wanted)?;
            if satisfied || exhausted || depth >= 1 << 16 {
                return Ok(hits);
            }
            depth *= 4;
        }
    }
}

/// A chunk as an embedding pass sees it ([`CodeIndex::embedding_texts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingText {
    /// Its vector cache key.
    pub key: u64,
    /// Its file.
    pub path: String,
    /// The text a model embeds.
    pub text: String,
    /// The chunk's own text.
    pub content: String,
}

/// How hybrid search fuses the two rankings.
///
/// With `alpha` unset: reciprocal-rank fusion, a chunk at rank `r` (0-based) of a list scores
/// `weight / (k + r + 1)` from it and the scores of both lists add up. With `alpha` set: a
/// convex combination of the scores themselves, each list's scores scaled to 0..1 by its best
/// (`alpha` × lexical + (1 − `alpha`) × semantic), which keeps a decisive lexical match (an
/// identifier) on top where rank fusion would let a merely similar chunk overtake it. Lexical
/// scores are scaled from the last of their list; semantic ones from the similarity at the
/// `floor_quantile` of the whole corpus (see [`fuse`]).
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
    /// Semantic scores are scaled from the similarity this far up the corpus (0.99: what the
    /// chunk at the 99th percentile scores) to the best one.
    pub floor_quantile: f32,
    /// With `alpha` set: use the lexical weight measured for the embedding model
    /// ([`Fusion::for_model`]) instead of `alpha`, which then only serves models not measured.
    pub per_model: bool,
    /// Weight of the file-level BM25 score ([`crate::files`]), scaled to 0..1 by the best
    /// file's, added to every chunk of the file (0: off). 0.8, and 0.4 for routed queries,
    /// measured on the tuning splits with all three embedding configurations (the static
    /// model, the transformer, the default upgrade): every set's hybrid R@5 and MRR within
    /// 0.001 of the better single list or above it, real fix commits' Acc@5 +0.066 to +0.083
    /// over lexical search (0.6 / 0.4: worst −0.003; 1.0 / 0.4: −0.014; 0.8 / 0.5: −0.007).
    pub file_weight: f32,
    /// The same for queries kept in lexical order (identifier routing): there the file score
    /// is added to the lexical scores scaled to 0..1 (0: the lexical order is kept).
    pub routed_file_weight: f32,
}

impl Default for Fusion {
    /// Tuned on the tuning splits of the eval sets in `bench/eval/` (see the README's search
    /// quality table and [`MODEL_LEXICAL_WEIGHTS`]).
    fn default() -> Self {
        Fusion {
            k: 60.0,
            lexical: 1.0,
            semantic: 1.0,
            depth: 50,
            alpha: Some(0.5),
            identifier_routing: true,
            floor_quantile: 0.99,
            per_model: true,
            file_weight: 0.8,
            routed_file_weight: 0.4,
        }
    }
}

/// The lexical weight of the convex combination per embedding model (a prefix of the model's
/// id), measured on the tuning splits of `bench/eval/` (Django 5.1.4 and tantivy 0.27.0, eight
/// sets), taking the weight whose worst set loses least against the better of lexical and
/// semantic search alone. A model's similarities are worth as much as they predict: the
/// transformer's are, so it gets the larger share (at the old 0.5 hybrid fell 0.04 R@5 and
/// 0.08 MRR below the transformer alone on plain-language questions); for the static model
/// 0.55 beat 0.5 on MRR of the fix commits and the docs questions, and 0.45 or less lost
/// to lexical search. Tuning splits, lexical weight → worst set's R@5 / MRR against the
/// better single list: transformer 0.2 −0.005 / 0.000, 0.3 and 0.35 and 0.4 ±0.000,
/// 0.45 −0.037, 0.5 −0.037 / −0.083; static 0.45 −0.033 (MRR), 0.5 −0.025, 0.55 ±0.000,
/// 0.6 −0.013.
///
/// `repo-tuned-` is a static model tuned on its repository (`sift model tune`): 0.2, chosen on
/// the tuning half of Django's questions without identifiers (0.25 and 0.35 were worse there;
/// held out, 0.667 R@5 hybrid against 0.656 with 0.35).
pub const MODEL_LEXICAL_WEIGHTS: &[(&str, f32)] =
    &[("all-MiniLM-L6-v2-static", 0.55), ("all-MiniLM-L6-v2-int8", 0.35), ("repo-tuned-", 0.2)];

impl Fusion {
    /// This fusion for the embedding model `model_id`: with [`Fusion::per_model`] and a convex
    /// combination, the model's measured lexical weight ([`MODEL_LEXICAL_WEIGHTS`]) replaces
    /// `alpha`; otherwise (RRF, an explicit `alpha`, a model not measured) it is unchanged.
    pub fn for_model(&self, model_id: &str) -> Fusion {
        let measured = MODEL_LEXICAL_WEIGHTS.iter().find(|(p, _)| model_id.starts_with(p));
        match (self.per_model, self.alpha, measured) {
            (true, Some(_), Some((_, w))) => Fusion { alpha: Some(*w), ..*self },
            _ => *self,
        }
    }
}

/// Fuses two hit lists (the same chunk is the same path and start line); best first, with
/// `opts`' per-file limit and `k`.
///
/// `sims`, the query's similarity to every chunk (from the [`VectorIndex`] the semantic list
/// came from), makes the convex combination fairer in two ways: semantic scores are scaled
/// from a corpus-wide floor ([`Fusion::floor_quantile`]) instead of from the last of the list,
/// so a flat head of near-equal similarities is not stretched into a decisive-looking spread;
/// and a lexical hit missing from the semantic list gets its own similarity instead of none.
/// Measured on `bench/eval/` with the static model (recall@5 on plain-language questions):
/// scaled from the list's last 0.47, from the corpus mean 0.48, from the 90th / 98th / 99th /
/// 99.5th percentile 0.51 / 0.55 / 0.54 / 0.53.
///
/// Identifier routing: when the query names identifiers (see [`query_identifiers`]), or is a
/// short one (three words or fewer, question words aside) whose word is the name of a symbol
/// among the first lexical hits (`where is the slugify function`), it is a lookup: lexical
/// search is what finds names, its order is kept (it already weighs symbol names up), and the
/// semantic ranking only adds chunks after it.
///
/// Symbol-name boost (without routing): a chunk that defines an identifier the query names goes
/// before chunks that merely resemble the query, and more so when its enclosing symbol is named
/// too (`LocaleMiddleware.process_response`).
pub fn fuse(
    query: &str,
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    sims: Option<&dyn CorpusSimilarity>,
    opts: &SearchOptions,
    fusion: &Fusion,
) -> Vec<Hit> {
    fuse_with_files(&Terms::new(query), lexical, semantic, sims, None, opts, fusion)
}

/// [`fuse`], with each chunk's file-level BM25 score ([`crate::files::file_scores`]) adding
/// [`Fusion::file_weight`] times its share of the best file's.
pub fn fuse_with_files(
    query: &Terms,
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    sims: Option<&dyn CorpusSimilarity>,
    files: Option<&HashMap<String, f32>>,
    opts: &SearchOptions,
    fusion: &Fusion,
) -> Vec<Hit> {
    let named = query_identifiers(query.text());
    if fusion.identifier_routing && (!named.is_empty() || names_a_symbol(query, &lexical)) {
        let mut lexical = lexical;
        let seen: std::collections::HashSet<(String, u64)> =
            lexical.iter().map(|h| (h.path.clone(), h.start_line)).collect();
        lexical.extend(
            semantic
                .into_iter()
                .filter(|h| !seen.contains(&(h.path.clone(), h.start_line)))
                .map(|h| Hit { score: 0.0, ..h }),
        );
        if let Some(files) = files.filter(|_| fusion.routed_file_weight > 0.0) {
            // Lexical scores scaled to 0..1 plus the file score; the appended hits score 0.
            let lexical_only =
                Fusion { alpha: Some(1.0), file_weight: fusion.routed_file_weight, ..*fusion };
            return fuse_scored(&[], lexical, Vec::new(), None, Some(files), opts, &lexical_only);
        }
        // Fused by rank alone (RRF over one list), so the appended hits' scores do not matter.
        let lexical_only = Fusion { semantic: 0.0, alpha: None, ..*fusion };
        return fuse_scored(&[], lexical, Vec::new(), None, None, opts, &lexical_only);
    }
    fuse_scored(&named, lexical, semantic, sims, files, opts, fusion)
}

fn fuse_scored(
    named: &[String],
    lexical: Vec<Hit>,
    semantic: Vec<Hit>,
    sims: Option<&dyn CorpusSimilarity>,
    files: Option<&HashMap<String, f32>>,
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
    let lex_scale = scale(&lexical);
    let sem_scale = match sims {
        Some(sims) => {
            let max = semantic.iter().map(|h| h.score).fold(f32::MIN, f32::max);
            let floor = sims.quantile(fusion.floor_quantile);
            (floor, (max - floor).max(1e-6))
        }
        None => scale(&semantic),
    };
    let in_semantic: HashSet<(String, u64)> =
        semantic.iter().map(|h| (h.path.clone(), h.start_line)).collect();
    for (which, list) in [(0, lexical), (1, semantic)] {
        for (rank, hit) in list.into_iter().enumerate() {
            let key = (hit.path.clone(), hit.start_line);
            let add = match fusion.alpha {
                None => {
                    let weight = if which == 0 { fusion.lexical } else { fusion.semantic };
                    weight / (fusion.k + rank as f32 + 1.0)
                }
                Some(alpha) => {
                    let ((min, span), w) =
                        if which == 0 { (lex_scale, alpha) } else { (sem_scale, 1.0 - alpha) };
                    let mut add = w * ((hit.score - min) / span).max(0.0);
                    // A lexical hit the semantic list left out: its own similarity.
                    if which == 0
                        && !in_semantic.contains(&key)
                        && let Some(sim) = sims.zip(hit.key).and_then(|(s, k)| s.of_key(k))
                    {
                        let (min, span) = sem_scale;
                        add += (1.0 - alpha) * ((sim - min) / span).max(0.0);
                    }
                    add
                }
            };
            match scores.get_mut(&key) {
                Some((score, _)) => *score += add,
                None => {
                    scores.insert(key, (add + boost(&hit), all.len()));
                    all.push(hit);
                }
            }
        }
    }
    if let Some(files) = files.filter(|_| fusion.file_weight > 0.0) {
        let best = files.values().copied().fold(0f32, f32::max);
        if best > 0.0 {
            for ((path, _), (score, _)) in scores.iter_mut() {
                *score += fusion.file_weight * files.get(path).copied().unwrap_or(0.0) / best;
            }
        }
    }
    let mut ranked: Vec<(f32, usize)> = scores.into_values().collect();
    // Ties go to the earlier (lexical-first) hit, so the order is deterministic.
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep = Keep::new(opts);
    let mut out = Vec::with_capacity(opts.k);
    let mut slots: Vec<Option<Hit>> = all.into_iter().map(Some).collect();
    for (score, i) in ranked {
        let Some(mut hit) = slots[i].take() else { continue };
        if !keep.admit(&hit.path) {
            continue;
        }
        hit.score = score;
        out.push(hit);
        if keep.full() {
            break;
        }
    }
    out
}

/// Whether `query` is short (three search words or fewer) and one of its words is the name of a
/// symbol among the first ten lexical hits: a lookup of that symbol.
fn names_a_symbol(query: &Terms, lexical: &[Hit]) -> bool {
    let words = query.tokens();
    words.len() <= 3
        && words.iter().any(|w| {
            w.len() > 2
                && lexical
                    .iter()
                    .take(10)
                    .any(|h| h.symbol.as_deref().is_some_and(|s| s.eq_ignore_ascii_case(w)))
        })
}

/// The words of a query spelled as identifiers: containing `_`, with a lower-to-upper case
/// change, or written as a call (`bulk_create`, `QuerySet`, `parseConfig`, `__contains__`,
/// `explain()`; `QuerySet.bulk_create` gives both names).
pub fn query_identifiers(query: &str) -> Vec<String> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = query;
    while let Some(start) = rest.find(is_word) {
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        let (w, after) = rest.split_at(end);
        rest = after;
        let inner_underscore = w.trim_matches('_').contains('_');
        let dunder = w.len() > 4 && w.starts_with("__") && w.ends_with("__");
        let chars: Vec<char> = w.chars().collect();
        let camel = chars.windows(2).any(|p| p[0].is_lowercase() && p[1].is_uppercase());
        let call = after.starts_with("()") && w.chars().next().is_some_and(char::is_alphabetic);
        if (w.len() > 2 && (inner_underscore || camel || call)) || dunder {
            out.push(w.to_string());
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
            key: None,
            unsaved: false,
            aside: None,
        }
    }

    fn scored(path: &str, score: f32, key: u64) -> Hit {
        Hit { score, key: Some(key), ..hit(path, 1) }
    }

    /// A corpus whose chunks' similarities to the query are known.
    struct Corpus {
        sims: HashMap<u64, f32>,
        floor: f32,
    }

    impl CorpusSimilarity for Corpus {
        fn of_key(&self, key: u64) -> Option<f32> {
            self.sims.get(&key).copied()
        }
        fn quantile(&self, _: f32) -> f32 {
            self.floor
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
        let opts = SearchOptions::top(10);
        let fused = fuse("q", lexical, semantic, None, &opts, &rrf());
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
        let opts = SearchOptions::top(10);
        let fusion = Fusion { semantic: 2.0, ..rrf() };
        assert_eq!(
            order(&fuse("q", lexical, semantic, None, &opts, &fusion)),
            [("b", 1), ("a", 1)]
        );
    }

    #[test]
    fn per_file_limit_and_k_apply_after_fusion() {
        let lexical = vec![hit("a", 1), hit("a", 9), hit("b", 1)];
        let semantic = vec![hit("a", 9), hit("a", 20), hit("c", 1)];
        let opts = SearchOptions { max_per_file: Some(1), ..SearchOptions::top(2) };
        let fused = fuse("q", lexical, semantic, None, &opts, &rrf());
        assert_eq!(order(&fused), [("a", 9), ("b", 1)]);
    }

    #[test]
    fn identifiers_are_recognised_in_queries() {
        assert_eq!(
            query_identifiers("where is QuerySet.bulk_create implemented"),
            ["QuerySet", "bulk_create"]
        );
        assert_eq!(query_identifiers("parseConfig in __init__"), ["parseConfig", "__init__"]);
        assert_eq!(query_identifiers("Prevented F.__contains__() from hanging"), ["__contains__"]);
        assert_eq!(query_identifiers("Fixed the format of explain() output"), ["explain"]);
        assert!(query_identifiers("where do we stop framing (or not)").is_empty());
        assert!(query_identifiers("a __ b ____ c () d").is_empty());
    }

    #[test]
    fn a_named_definition_keeps_its_lexical_place_and_leads_without_routing() {
        let mut def = hit("query.py", 100);
        def.symbol = Some("bulk_create".into());
        def.container = Some("QuerySet".into());
        let mut other = hit("manager.py", 5);
        other.symbol = Some("bulk_create".into());
        other.container = Some("Manager".into());
        let caller = hit("forms.py", 7);
        let opts = SearchOptions::top(10);
        let lexical = vec![other.clone(), def.clone(), caller.clone()];
        let semantic = vec![caller.clone(), other.clone(), def.clone()];
        let fused = |fusion: &Fusion| {
            let fused = fuse(
                "QuerySet.bulk_create",
                lexical.clone(),
                semantic.clone(),
                None,
                &opts,
                fusion,
            );
            order(&fused).into_iter().map(|(p, l)| (p.to_string(), l)).collect::<Vec<_>>()
        };
        // Routed (the default): the lexical order, which already weighs symbol names up.
        let lexical_order = [("manager.py", 5), ("query.py", 100), ("forms.py", 7)];
        assert_eq!(fused(&Fusion::default()), lexical_order.map(|(p, l)| (p.to_string(), l)));
        // Fused without routing: the definition the query names, container included, leads.
        let def_first = [("query.py", 100), ("manager.py", 5), ("forms.py", 7)];
        for fusion in [rrf(), Fusion { identifier_routing: false, ..Fusion::default() }] {
            assert_eq!(fused(&fusion), def_first.map(|(p, l)| (p.to_string(), l)));
        }
        // Without identifiers in the query, no boost: the chunk both rankings put first wins.
        let lexical = vec![caller.clone(), other, def];
        let fused = fuse("bulk create", lexical.clone(), semantic.clone(), None, &opts, &rrf());
        assert_eq!(order(&fused)[0], ("forms.py", 7));
        let fused = fuse("QuerySet.bulk_create", lexical, semantic, None, &opts, &rrf());
        assert_eq!(order(&fused)[0], ("query.py", 100));
    }

    #[test]
    fn a_short_query_naming_a_symbol_keeps_the_lexical_order() {
        let mut def = scored("text.py", 9.0, 1);
        def.symbol = Some("slugify".into());
        let lexical = vec![scored("filters.py", 10.0, 2), def, scored("gdal.py", 2.0, 3)];
        let semantic = vec![scored("autoreload.py", 0.9, 4), scored("feeds.py", 0.89, 5)];
        let opts = SearchOptions::top(10);
        let fusion = Fusion::default();
        let fused = fuse(
            "where is the slugify function",
            lexical.clone(),
            semantic.clone(),
            None,
            &opts,
            &fusion,
        );
        assert_eq!(
            order(&fused),
            [
                ("filters.py", 1),
                ("text.py", 1),
                ("gdal.py", 1),
                ("autoreload.py", 1),
                ("feeds.py", 1)
            ]
        );
        // A sentence is fused, even when one of its words names a symbol.
        let long = "where do we slugify titles into url fragments for pages";
        let fused = fuse(long, lexical, semantic, None, &opts, &fusion);
        assert_eq!(order(&fused)[..2], [("filters.py", 1), ("autoreload.py", 1)]);
    }

    #[test]
    fn each_model_gets_its_measured_lexical_weight() {
        let fusion = Fusion::default();
        let static_id = "all-MiniLM-L6-v2-static-v1+sqrt-tf";
        let transformer = "all-MiniLM-L6-v2-int8/max128";
        assert_eq!(fusion.for_model(static_id).alpha, Some(0.55));
        assert_eq!(fusion.for_model(transformer).alpha, Some(0.35));
        assert_eq!(fusion.for_model("a-model-never-measured").alpha, Some(0.5));
        // An explicit choice (`sift eval --alpha`, RRF) is kept.
        let explicit = Fusion { alpha: Some(0.7), per_model: false, ..fusion };
        assert_eq!(explicit.for_model(transformer).alpha, Some(0.7));
        assert_eq!(rrf().for_model(transformer).alpha, None);
    }

    #[test]
    fn a_decisive_similarity_outranks_a_weak_lexical_lead_with_the_transformer_weight() {
        // A question in other words than the code's: lexical search ranks an unrelated chunk
        // first by a small margin; the model finds the answer well above the corpus floor.
        let lexical = vec![scored("sql/where.py", 10.0, 1), scored("answer.py", 8.0, 2)];
        let semantic = vec![scored("answer.py", 0.60, 2), scored("sql/where.py", 0.32, 1)];
        let corpus = Corpus { sims: HashMap::from([(1, 0.32), (2, 0.60)]), floor: 0.30 };
        let opts = SearchOptions::top(10);
        let query = "how do we stop other sites from framing our pages";
        let first = |model: &str| {
            let fusion = Fusion::default().for_model(model);
            let fused =
                fuse(query, lexical.clone(), semantic.clone(), Some(&corpus), &opts, &fusion);
            fused[0].path.clone()
        };
        assert_eq!(first("all-MiniLM-L6-v2-int8/max128"), "answer.py");
        // The old equal weights leave the lexical lead on top (0.533 against 0.5).
        let even = Fusion { alpha: Some(0.5), per_model: false, ..Fusion::default() };
        let fused = fuse(query, lexical, semantic, Some(&corpus), &opts, &even);
        assert_eq!(fused[0].path, "sql/where.py");
    }

    #[test]
    fn semantic_scores_scale_from_the_corpus_and_lexical_hits_get_their_similarity() {
        // Lexical: a decisive pair, then weak matches. Semantic: a flat head of near-equal
        // similarities that contains neither of the pair.
        let lexical = vec![
            scored("filters.py", 10.0, 1),
            scored("text.py", 9.5, 2),
            scored("gdal.py", 5.0, 3),
            scored("window.py", 1.0, 4),
        ];
        let semantic = vec![scored("autoreload.py", 0.45, 5), scored("feeds.py", 0.449, 6)];
        let opts = SearchOptions::top(10);
        // Not routed: no word of this query names a symbol among the lexical hits.
        let query = "turn a title into a url fragment";
        let fusion = Fusion::default();
        // Scaled within the lists alone, the flat head's first outranks the second lexical hit.
        let alone = fuse(query, lexical.clone(), semantic.clone(), None, &opts, &fusion);
        assert_eq!(order(&alone)[..3], [("filters.py", 1), ("autoreload.py", 1), ("text.py", 1)]);
        // Against the corpus (floor 0.30) the head is worth less, and text.py's own similarity
        // (0.35, below the semantic list) counts: it stays second.
        let corpus = Corpus {
            sims: HashMap::from([(1, 0.40), (2, 0.35), (3, 0.1), (4, 0.2), (5, 0.45), (6, 0.449)]),
            floor: 0.30,
        };
        let fused = fuse(query, lexical, semantic, Some(&corpus), &opts, &fusion);
        assert_eq!(order(&fused)[..3], [("filters.py", 1), ("text.py", 1), ("autoreload.py", 1)]);
        // filters.py: 0.5 × 1 + 0.5 × (0.40 − 0.30) / 0.15.
        assert!((fused[0].score - (0.5 + 1.0 / 3.0)).abs() < 1e-4, "{}", fused[0].score);
    }
}
