//! The on-disk index and the unsaved editor buffers ([`Overlay`]) searched as one corpus.
//!
//! Scored apart, the two cannot be merged: BM25 of a handful of open buffers has IDFs from a
//! handful of documents, so a name that is unique in a large repository (`qwzvbn_helper` in a
//! new buffer) scores lower there than a common word (`helper`) in the repository's own
//! ranking. Here both sides are scored with the statistics of the union (document frequencies,
//! document counts and field lengths added up), so their scores are the same scale and merge
//! by value; and the overlay's chunks get cosine similarities from the same model as the
//! on-disk vectors ([`Overlay::embed_missing`]), so the semantic lists merge by value too, and
//! fusion sees one lexical and one semantic ranking. On disk, the overlay's files are left out:
//! the buffer is what the user sees.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{DocAddress, Searcher, Term};

use crate::aside::Asides;
use crate::error::Result;
use crate::files::{FileMap, Part, file_scores};
use crate::hybrid::{CorpusSimilarity, Fusion, fuse_with_files, query_identifiers};
use crate::index::CodeIndex;
use crate::overlay::Overlay;
use crate::search::{Early, Hit, Keep, SearchOptions, Terms, collect_hits, search_searcher};
use crate::vectors::{Similarities, VectorIndex, dot_i8, inverse_norm, live_keys, quantized_query};

/// Where `Hit`s of unsaved buffers come from, in error messages.
const MEMORY: &str = "<memory>";

/// Similarities of chunks by chunk key.
type SimilarityByKey = HashMap<u64, f32>;

/// BM25 statistics of several searchers taken as one corpus.
struct Union<'a>(&'a [&'a Searcher]);

impl Bm25StatisticsProvider for Union<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.total_num_tokens(field)).sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.total_num_docs()).sum()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.doc_freq(term)).sum()
    }
}

/// A query's similarity to the chunks of the on-disk index and of the overlay.
struct WithOverlay<'a> {
    disk: &'a Similarities<'a>,
    unsaved: SimilarityByKey,
}

impl CorpusSimilarity for WithOverlay<'_> {
    fn of_key(&self, key: u64) -> Option<f32> {
        self.unsaved.get(&key).copied().or_else(|| self.disk.of_key(key))
    }

    fn quantile(&self, q: f32) -> f32 {
        // The overlay is a few documents among thousands: the corpus floor is the index's.
        self.disk.quantile(q)
    }
}

/// The on-disk index of one repository and, optionally, the unsaved buffers laid over it.
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    index: &'a CodeIndex,
    overlay: Option<&'a Overlay>,
}

impl<'a> Sources<'a> {
    /// `index`, with `overlay`'s documents in place of their files on disk (an empty overlay
    /// is the same as none).
    pub fn new(index: &'a CodeIndex, overlay: Option<&'a Overlay>) -> Sources<'a> {
        Sources { index, overlay: overlay.filter(|o| !o.is_empty()) }
    }

    fn held(&self, path: &str) -> bool {
        self.overlay.is_some_and(|o| o.contains(path))
    }

    /// BM25 over both, scored as one corpus; best first, at most `opts.k`.
    pub fn lexical(&self, query: &Terms, opts: &SearchOptions) -> Result<Vec<Hit>> {
        let disk = self.index.reader.searcher();
        let f = &self.index.fields;
        let where_ = &self.index.layout.index_dir;
        let map = self.index.aside_map(&disk, opts.leave_aside)?;
        let tokens: Vec<&str> = query.tokens().iter().map(String::as_str).collect();
        let leaves_out = |addr: DocAddress| {
            map.as_ref().is_some_and(|m| m.leaves_out(addr, opts.leave_aside, &tokens))
        };
        let early: Early<'_> = map.as_ref().map(|_| &leaves_out as &dyn Fn(DocAddress) -> bool);
        let Some(overlay) = self.overlay else {
            return search_searcher(&disk, &disk, f, where_, query, opts, &|_| false, early);
        };
        let memory = overlay.searcher();
        let both = [&disk, &memory];
        let stats = Union(&both);
        let mut hits = search_searcher(
            &disk,
            &stats,
            f,
            where_,
            query,
            opts,
            &|p| overlay.contains(p),
            early,
        )?;
        let unsaved = search_searcher(
            &memory,
            &stats,
            overlay.fields(),
            Path::new(MEMORY),
            query,
            opts,
            &|_| false,
            None,
        )?;
        hits.extend(unsaved.into_iter().map(|h| Hit { unsaved: true, ..h }));
        // Stable: ties keep the on-disk hit first.
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(Keep::cut(opts, hits))
    }

    /// The query's similarity to every overlay chunk: its own vector (see
    /// [`Overlay::embed_missing`]) or, for a chunk unchanged from disk, the one on disk.
    fn unsaved_similarities(
        &self,
        disk: &Similarities<'_>,
        query_vec: &[f32],
    ) -> Result<(Vec<(f32, DocAddress)>, SimilarityByKey)> {
        let Some(overlay) = self.overlay else { return Ok((Vec::new(), HashMap::new())) };
        let (q, qinv) = quantized_query(query_vec);
        let mut ranked = Vec::new();
        let mut by_key = HashMap::new();
        for (key, addr) in live_keys(&overlay.searcher())? {
            let sim = match overlay.vector(key) {
                Some(v) if v.len() == q.len() => dot_i8(&q, v) as f32 * inverse_norm(v) * qinv,
                _ => match disk.of_key(key) {
                    Some(sim) => sim,
                    None => continue,
                },
            };
            by_key.insert(key, sim);
            ranked.push((sim, addr));
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok((ranked, by_key))
    }

    /// The chunks most similar to `query_vec` (the embedding of `query`, which only picks the
    /// snippet lines) on disk and in the overlay, best first; `sims` is `vectors`' similarity
    /// to `query_vec`.
    fn semantic_with(
        &self,
        sims: &Similarities<'_>,
        query: &Terms,
        query_vec: &[f32],
        opts: &SearchOptions,
    ) -> Result<(Vec<Hit>, SimilarityByKey)> {
        let mut hits = self.index.semantic_hits(sims, query, opts, &|p| self.held(p))?;
        let (ranked, by_key) = self.unsaved_similarities(sims, query_vec)?;
        if let Some(overlay) = self.overlay
            && !ranked.is_empty()
        {
            let wanted: HashSet<&str> = query.tokens().iter().map(String::as_str).collect();
            let memory = overlay.searcher();
            let (unsaved, _) = collect_hits(
                &memory,
                overlay.fields(),
                Path::new(MEMORY),
                ranked,
                opts,
                &|_| false,
                &wanted,
            )?;
            hits.extend(unsaved.into_iter().map(|h| Hit { unsaved: true, ..h }));
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits = Keep::cut(opts, hits);
        }
        Ok((hits, by_key))
    }

    /// Semantic search over both; best first, at most `opts.k`.
    pub fn semantic(
        &self,
        vectors: &VectorIndex,
        query: &Terms,
        query_vec: &[f32],
        opts: &SearchOptions,
    ) -> Result<Vec<Hit>> {
        let sims = vectors.similarities(query_vec);
        Ok(self.semantic_with(&sims, query, query_vec, opts)?.0)
    }

    /// The lexical and the semantic ranking of both, fused (see [`fuse`]). When the query has
    /// no words the lexical index can match, the semantic ranking alone answers.
    pub fn hybrid(
        &self,
        vectors: &VectorIndex,
        query: &Terms,
        query_vec: &[f32],
        opts: &SearchOptions,
        fusion: &Fusion,
    ) -> Result<Vec<Hit>> {
        // Each ranking is read `depth` deep whatever the list keeps of the fused one (a list of
        // files as well: hybrid's pool is the fusion's). A query that names an identifier is a
        // lookup: its lexical ranking keeps what natural-language ranking leaves aside.
        let depth = SearchOptions {
            leave_aside: opts.leave_aside,
            ..SearchOptions::top(fusion.depth.max(opts.k))
        };
        let mut lookup = !query_identifiers(query.text()).is_empty();
        let lexical_depth = SearchOptions {
            leave_aside: if lookup { Asides::NONE } else { opts.leave_aside },
            ..depth.clone()
        };
        let lexical_of = |opts: &SearchOptions| match self.lexical(query, opts) {
            Ok(hits) => Ok(hits),
            Err(crate::Error::EmptyQuery(_)) => Ok(Vec::new()),
            Err(e) => Err(e),
        };
        let mut lexical = lexical_of(&lexical_depth)?;
        // Words that only content left aside holds ("Versuchen", a catalog's): that content is
        // what the query asks for, and its lexical ranking keeps it.
        if lexical.is_empty() && !lexical_depth.leave_aside.is_empty() {
            lexical = lexical_of(&SearchOptions { leave_aside: Asides::NONE, ..depth.clone() })?;
            lookup = !lexical.is_empty();
        }
        let sims = vectors.similarities(query_vec);
        let (semantic, unsaved) = self.semantic_with(&sims, query, query_vec, &depth)?;
        let corpus = WithOverlay { disk: &sims, unsaved };
        let files = match fusion.file_weight > 0.0 || fusion.routed_file_weight > 0.0 {
            true => {
                Some(self.file_scores(query, if lookup { Asides::NONE } else { opts.leave_aside })?)
            }
            false => None,
        };
        Ok(fuse_with_files(query, lexical, semantic, Some(&corpus), files.as_ref(), opts, fusion))
    }

    /// File-level BM25 of the query over both (see [`crate::files`]), without the files of
    /// `leave_aside`'s kinds.
    fn file_scores(&self, query: &Terms, leave_aside: Asides) -> Result<HashMap<String, f32>> {
        let tokens = query.tokens();
        if tokens.is_empty() {
            return Ok(HashMap::new());
        }
        let disk = self.index.reader.searcher();
        let disk_map = self.index.file_map(&disk)?;
        let held = |p: &str| self.held(p);
        let none = |_: &str| false;
        let mut parts = vec![Part {
            searcher: &disk,
            map: &disk_map,
            fields: &self.index.fields,
            where_: &self.index.layout.index_dir,
            skip: &held,
            leave_aside,
        }];
        // The overlay's few buffers change between queries: grouped each time.
        let memory = match self.overlay {
            Some(overlay) => {
                let searcher = overlay.searcher();
                let map = FileMap::build(&searcher, overlay.fields(), Path::new(MEMORY))?;
                Some((overlay, searcher, map))
            }
            None => None,
        };
        if let Some((overlay, searcher, map)) = &memory {
            parts.push(Part {
                searcher,
                map,
                fields: overlay.fields(),
                where_: Path::new(MEMORY),
                skip: &none,
                leave_aside,
            });
        }
        file_scores(&parts, tokens)
    }
}
