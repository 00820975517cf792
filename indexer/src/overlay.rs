//! Unsaved buffers: an in-memory index of the documents an editor has changed but not saved, so
//! search finds code as the user sees it, and the vectors of their chunks. [`crate::sources`]
//! searches the overlay and the on-disk index as one corpus.

use std::collections::HashMap;
use std::path::Path;

use tantivy::schema::Value;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::chunk::Chunker;
use crate::embed::{Embedder, embed_text};
use crate::error::{Error, Result};
use crate::index::register_tokenizer;
use crate::schema::{Fields, schema};
use crate::search::{Hit, SearchOptions, search_reader};
use crate::update::{chunk_docs, lang_label};

/// Heap for the overlay's writer: tantivy's minimum per thread.
const OVERLAY_HEAP: usize = 15_000_000;

/// An in-memory index of unsaved documents, keyed by path relative to the repository root.
pub struct Overlay {
    reader: IndexReader,
    writer: IndexWriter,
    fields: Fields,
    chunker: Chunker,
    /// The content's hash by path, for the documents the overlay holds (the text itself lives
    /// with the editor's documents: it is not kept twice).
    docs: HashMap<String, blake3::Hash>,
    /// The model the vectors below are from.
    vectors_model: String,
    /// Quantised vectors of the overlay's chunks by chunk key (see [`Overlay::embed_missing`]).
    vectors: HashMap<u64, Vec<i8>>,
}

impl Overlay {
    /// An empty overlay.
    pub fn new() -> Result<Overlay> {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        register_tokenizer(&index);
        let here = Path::new("<memory>");
        let writer =
            index.writer_with_num_threads(1, OVERLAY_HEAP).map_err(|e| Error::tantivy(here, e))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| Error::tantivy(here, e))?;
        Ok(Overlay {
            reader,
            writer,
            fields,
            chunker: Chunker::default(),
            docs: HashMap::new(),
            vectors_model: String::new(),
            vectors: HashMap::new(),
        })
    }

    /// Sets the unsaved content of `rel`.
    pub fn set(&mut self, rel: &str, text: &str) -> Result<()> {
        let hash = blake3::hash(text.as_bytes());
        if self.docs.get(rel) == Some(&hash) {
            return Ok(());
        }
        self.writer.delete_term(Term::from_field_text(self.fields.path, rel));
        let docs =
            chunk_docs(&self.fields, &mut self.chunker, rel, lang_label(Path::new(rel)), text);
        for doc in docs {
            self.writer.add_document(doc).map_err(|e| Error::tantivy("<memory>", e))?;
        }
        self.docs.insert(rel.to_string(), hash);
        self.commit()
    }

    /// Forgets `rel` (its saved content on disk counts again).
    pub fn remove(&mut self, rel: &str) -> Result<()> {
        if self.docs.remove(rel).is_none() {
            return Ok(());
        }
        self.writer.delete_term(Term::from_field_text(self.fields.path, rel));
        self.commit()
    }

    /// Whether the overlay holds `rel`.
    pub fn contains(&self, rel: &str) -> bool {
        self.docs.contains_key(rel)
    }

    /// Whether the overlay holds no document.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Searches the unsaved documents alone, scored by their own statistics (to search them
    /// with the on-disk index, use [`crate::sources::Sources`]).
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>> {
        let terms = crate::search::Terms::new(query);
        if self.docs.is_empty() {
            terms.require()?;
            return Ok(Vec::new());
        }
        search_reader(&self.reader, &self.fields, Path::new("<memory>"), &terms, opts, &|_| false)
    }

    /// Embeds the overlay's chunks that have no vector yet with `embedder`, except those
    /// `known` already has (a chunk whose text is unchanged from the file on disk has its
    /// vector in the on-disk cache); forgets vectors of chunks that are gone. Returns how many
    /// chunks were embedded. Vectors of another model are dropped first.
    pub fn embed_missing(
        &mut self,
        embedder: &dyn Embedder,
        known: &dyn Fn(u64) -> bool,
    ) -> Result<usize> {
        if self.vectors_model != embedder.id() {
            self.vectors.clear();
            self.vectors_model = embedder.id().to_string();
        }
        let searcher = self.searcher();
        let f = &self.fields;
        let mut live = std::collections::HashSet::new();
        let mut missing: Vec<(u64, String)> = Vec::new();
        for (key, addr) in crate::vectors::live_keys(&searcher)? {
            live.insert(key);
            if self.vectors.contains_key(&key) || known(key) {
                continue;
            }
            let doc: TantivyDocument =
                searcher.doc(addr).map_err(|e| Error::tantivy("<memory>", e))?;
            let text = |field| doc.get_first(field).and_then(|v| v.as_str());
            let path = text(f.path).unwrap_or_default();
            missing.push((
                key,
                embed_text(path, text(f.symbol), text(f.container), text(f.content).unwrap_or("")),
            ));
        }
        self.vectors.retain(|k, _| live.contains(k));
        missing.sort();
        missing.dedup_by_key(|(k, _)| *k);
        if missing.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = crate::embed::embed_documents(embedder, &texts)?;
        for ((key, _), v) in missing.iter().zip(vectors) {
            self.vectors.insert(*key, crate::vectors::quantize(&v));
        }
        Ok(missing.len())
    }

    /// The vector of an overlay chunk embedded by [`Overlay::embed_missing`], by chunk key.
    pub(crate) fn vector(&self, key: u64) -> Option<&[i8]> {
        self.vectors.get(&key).map(Vec::as_slice)
    }

    /// A searcher over the overlay as it is.
    pub(crate) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// The overlay's fields (the same schema as the on-disk index).
    pub(crate) fn fields(&self) -> &Fields {
        &self.fields
    }

    fn commit(&mut self) -> Result<()> {
        self.writer.commit().map_err(|e| Error::tantivy("<memory>", e))?;
        self.reader.reload().map_err(|e| Error::tantivy("<memory>", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsaved_text_is_searchable_and_replaced_and_removed() {
        let mut overlay = Overlay::new().unwrap();
        let opts = SearchOptions::default();
        overlay.set("src/a.rs", "fn draftword() {}\n").unwrap();
        let hits = overlay.search("draftword", &opts).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(
            (hits[0].path.as_str(), hits[0].symbol.as_deref()),
            ("src/a.rs", Some("draftword"))
        );

        overlay.set("src/a.rs", "fn renamedword() {}\n").unwrap();
        assert!(overlay.search("draftword", &opts).unwrap().is_empty());
        assert_eq!(overlay.search("renamedword", &opts).unwrap().len(), 1);

        overlay.remove("src/a.rs").unwrap();
        assert!(overlay.search("renamedword", &opts).unwrap().is_empty());
        assert!(!overlay.contains("src/a.rs"));
    }
}
