//! Unsaved buffers: an in-memory index of the documents an editor has changed but not saved, so
//! search finds code as the user sees it. Callers search the overlay and the on-disk index
//! (leaving out the overlay's files there) and merge by score.

use std::collections::HashMap;
use std::path::Path;

use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Term};

use crate::chunk::Chunker;
use crate::error::{Error, Result};
use crate::index::{Fields, register_tokenizer, schema};
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
    /// Content by path, for the documents the overlay holds.
    docs: HashMap<String, String>,
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
        Ok(Overlay { reader, writer, fields, chunker: Chunker::default(), docs: HashMap::new() })
    }

    /// Sets the unsaved content of `rel`.
    pub fn set(&mut self, rel: &str, text: &str) -> Result<()> {
        if self.docs.get(rel).is_some_and(|t| t == text) {
            return Ok(());
        }
        self.writer.delete_term(Term::from_field_text(self.fields.path, rel));
        let docs =
            chunk_docs(&self.fields, &mut self.chunker, rel, lang_label(Path::new(rel)), text);
        for doc in docs {
            self.writer.add_document(doc).map_err(|e| Error::tantivy("<memory>", e))?;
        }
        self.docs.insert(rel.to_string(), text.to_string());
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

    /// The unsaved content of `rel`.
    pub fn text(&self, rel: &str) -> Option<&str> {
        self.docs.get(rel).map(String::as_str)
    }

    /// Searches the unsaved documents.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>> {
        if self.docs.is_empty() {
            crate::search::query_tokens(query)?;
            return Ok(Vec::new());
        }
        search_reader(&self.reader, &self.fields, Path::new("<memory>"), query, opts, &|_| false)
    }

    fn commit(&mut self) -> Result<()> {
        self.writer.commit().map_err(|e| Error::tantivy("<memory>", e))?;
        self.reader.reload().map_err(|e| Error::tantivy("<memory>", e))
    }
}

/// Merges hits from the on-disk index and an overlay: best first, at most `k`.
pub fn merge(mut a: Vec<Hit>, b: Vec<Hit>, k: usize) -> Vec<Hit> {
    a.extend(b);
    a.sort_by(|x, y| y.score.total_cmp(&x.score));
    a.truncate(k);
    a
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
