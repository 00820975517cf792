//! File-level BM25: each file scored as one document, its chunks' term frequencies and lengths
//! added up, with a match in the path counted once per file.
//!
//! Chunk-level BM25 finds the chunk that says most of a query; a query that describes a change
//! ("Added support for pyformat style parameters on SQLite") is often answered by a file whose
//! chunks each say part of it, and whose path says the rest. Hybrid search adds this file score
//! to every chunk of the file ([`crate::hybrid::Fusion::file_weight`]).
//!
//! Computed from the index as it is, with no extra data on disk: the `path` field's terms name
//! every file and their postings list its chunks; the content field's fieldnorms give their
//! lengths. Files for which `skip` is true are left out (an overlay's files on disk). The
//! grouping of documents by file ([`FileMap`]) is kept between queries by a long-lived
//! process while the index does not change.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use tantivy::index::SegmentId;
use tantivy::postings::Postings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Searcher, TERMINATED, Term};

use tantivy::DocAddress;

use crate::aside::{Aside, Asides, classify_path};
use crate::error::{Error, Result};
use crate::schema::Fields;

/// BM25's term-frequency saturation, as tantivy's.
const K1: f32 = 1.2;
/// BM25's length normalisation, as tantivy's.
const B: f32 = 0.75;
/// Weight of a query word in a file's path, relative to its BM25 weight in the content.
pub const FILE_PATH_BOOST: f32 = 1.5;

/// One searcher's documents grouped by file, with each file's length (its chunks' content
/// lengths added up): one pass over the `path` field's terms and postings (about 2 ms on
/// Django's 17,000 chunks), which depends only on the searcher's segments and their deletions,
/// so a long-lived process keeps one per index state ([`crate::index::CodeIndex`] does).
#[derive(Debug, PartialEq)]
pub struct FileMap {
    files: Vec<String>,
    /// What each file is by its path alone, when natural-language ranking leaves it aside.
    aside: Vec<Option<Aside>>,
    lengths: Vec<u64>,
    /// Per segment: the file of each document (`u32::MAX`: none, or deleted).
    of_doc: Vec<Vec<u32>>,
    /// The segments and delete opstamps it was built from.
    segments: BTreeMap<SegmentId, Option<u64>>,
}

impl FileMap {
    /// Groups the live documents of `searcher` by file (`where_` names it in errors).
    pub fn build(searcher: &Searcher, fields: &Fields, where_: &Path) -> Result<FileMap> {
        let tantivy_err = |e| Error::tantivy(where_, e);
        let io_err = |e: std::io::Error| Error::tantivy(where_, e.into());
        // A path's documents can be in several segments: one number per path.
        let mut index_of: HashMap<String, u32> = HashMap::new();
        let mut map = FileMap {
            files: Vec::new(),
            aside: Vec::new(),
            lengths: Vec::new(),
            of_doc: Vec::new(),
            segments: searcher.generation().segments().clone(),
        };
        for segment in searcher.segment_readers() {
            let mut of_doc = vec![u32::MAX; segment.max_doc() as usize];
            let paths = segment.inverted_index(fields.path).map_err(tantivy_err)?;
            let norms = segment.get_fieldnorms_reader(fields.content).map_err(tantivy_err)?;
            let alive = segment.alive_bitset();
            let mut terms = paths.terms().stream().map_err(io_err)?;
            while terms.advance() {
                let Ok(path) = std::str::from_utf8(terms.key()) else { continue };
                let mut postings = paths
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)
                    .map_err(io_err)?;
                let mut idx = None;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        let i = *idx.get_or_insert_with(|| {
                            *index_of.entry(path.to_string()).or_insert_with(|| {
                                map.files.push(path.to_string());
                                map.lengths.push(0);
                                (map.files.len() - 1) as u32
                            })
                        });
                        of_doc[doc as usize] = i;
                        map.lengths[i as usize] += u64::from(norms.fieldnorm(doc));
                    }
                    doc = postings.advance();
                }
            }
            map.of_doc.push(of_doc);
        }
        map.aside = map.files.iter().map(|p| classify_path(p)).collect();
        Ok(map)
    }

    /// Whether the document at `addr` is in a file that `aside` leaves out of a ranking of a
    /// query with `tokens`, by the file's path alone (a cut before reading the document; what
    /// only its content shows is cut after).
    pub(crate) fn leaves_out(&self, addr: DocAddress, aside: Asides, tokens: &[&str]) -> bool {
        let Some(&file) =
            self.of_doc.get(addr.segment_ord as usize).and_then(|s| s.get(addr.doc_id as usize))
        else {
            return false;
        };
        match (self.aside.get(file as usize), self.files.get(file as usize)) {
            (Some(kind), Some(path)) => aside.leaves_out(*kind, path, tokens),
            _ => false,
        }
    }

    /// True when it was built from `searcher`'s very segments and deletions.
    pub fn fits(&self, searcher: &Searcher) -> bool {
        &self.segments == searcher.generation().segments()
    }
}

/// One searcher's documents grouped by file.
pub struct Part<'a> {
    /// The searcher.
    pub searcher: &'a Searcher,
    /// Its documents by file ([`FileMap::build`] of this searcher).
    pub map: &'a FileMap,
    /// Its schema's fields.
    pub fields: &'a Fields,
    /// Where it lives, for error messages.
    pub where_: &'a Path,
    /// Files of this searcher to leave out.
    pub skip: &'a dyn Fn(&str) -> bool,
    /// Files of these kinds ([`crate::aside`], by path) count in the corpus but are left out of
    /// the scores returned, unless the query names them: a file natural-language ranking
    /// leaves aside is no yardstick for the others.
    pub leave_aside: Asides,
}

/// File-level BM25 scores of `tokens` (search tokens: see [`crate::search::search_tokens`])
/// over the files of `parts` taken as one corpus; files that match no token are absent.
pub fn file_scores(parts: &[Part<'_>], tokens: &[String]) -> Result<HashMap<String, f32>> {
    // One numbering of the files of all parts (a path in two parts is one file), without the
    // skipped ones: per part, each of its files' number here (u32::MAX: skipped).
    let mut files: Vec<&str> = Vec::new();
    let mut index_of: HashMap<&str, u32> = HashMap::new();
    let mut lengths: Vec<u64> = Vec::new();
    let mut numbering: Vec<Vec<u32>> = Vec::with_capacity(parts.len());
    // Per file of that numbering: left out of the answer (see `Part::leave_aside`).
    let mut aside: Vec<bool> = Vec::new();
    let words: Vec<&str> = tokens.iter().map(String::as_str).collect();
    for part in parts {
        let mut local = Vec::with_capacity(part.map.files.len());
        for ((path, &length), kind) in
            part.map.files.iter().zip(&part.map.lengths).zip(&part.map.aside)
        {
            if (part.skip)(path) {
                local.push(u32::MAX);
                continue;
            }
            let i = *index_of.entry(path).or_insert_with(|| {
                files.push(path);
                lengths.push(0);
                aside.push(part.leave_aside.leaves_out(*kind, path, &words));
                (files.len() - 1) as u32
            });
            lengths[i as usize] += length;
            local.push(i);
        }
        numbering.push(local);
    }
    let n = files.len();
    if n == 0 {
        return Ok(HashMap::new());
    }
    let average = (lengths.iter().sum::<u64>() as f32 / n as f32).max(1.0);
    let idf = |df: usize| (1.0 + (n as f32 - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
    let mut scores = vec![0f32; n];
    for token in tokens {
        let mut tf: HashMap<u32, u32> = HashMap::new();
        let mut in_path: HashSet<u32> = HashSet::new();
        for (part, local) in parts.iter().zip(&numbering) {
            let io_err = |e: std::io::Error| Error::tantivy(part.where_, e.into());
            for (segment, of_doc) in part.searcher.segment_readers().iter().zip(&part.map.of_doc) {
                for (field, record) in [
                    (part.fields.content, IndexRecordOption::WithFreqs),
                    (part.fields.path_words, IndexRecordOption::Basic),
                ] {
                    let inverted = segment
                        .inverted_index(field)
                        .map_err(|e| Error::tantivy(part.where_, e))?;
                    let term = Term::from_field_text(field, token);
                    let Some(mut postings) =
                        inverted.read_postings(&term, record).map_err(io_err)?
                    else {
                        continue;
                    };
                    let mut doc = postings.doc();
                    while doc != TERMINATED {
                        let file = match of_doc[doc as usize] {
                            u32::MAX => u32::MAX,
                            f => local[f as usize],
                        };
                        if file != u32::MAX {
                            if field == part.fields.content {
                                *tf.entry(file).or_default() += postings.term_freq();
                            } else {
                                in_path.insert(file);
                            }
                        }
                        doc = postings.advance();
                    }
                }
            }
        }
        let content_idf = idf(tf.len());
        for (&file, &freq) in &tf {
            let freq = freq as f32;
            let norm = 1.0 - B + B * lengths[file as usize] as f32 / average;
            scores[file as usize] += content_idf * freq * (K1 + 1.0) / (freq + K1 * norm);
        }
        let path_idf = idf(in_path.len());
        for &file in &in_path {
            scores[file as usize] += FILE_PATH_BOOST * path_idf;
        }
    }
    Ok(files
        .into_iter()
        .zip(scores)
        .zip(aside)
        .filter(|((_, s), aside)| *s > 0.0 && !aside)
        .map(|((path, s), _)| (path.to_string(), s))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::FileMap;
    use crate::{CodeIndex, NoProgress, STORE_ENTRIES, Store, UpdateOptions};

    #[test]
    fn the_kept_grouping_is_the_index_as_it_is_after_every_commit() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| std::fs::write(root.join(rel), text).unwrap();
        write("a.py", "def alpha():\n    return 1\n");
        write("b.py", "def beta():\n    return 2\n\n\ndef gamma():\n    return 3\n");
        let store = Store::open(root, &[STORE_ENTRIES]).unwrap();
        let (index, _) = CodeIndex::open_or_create(&store).unwrap();
        let update = || index.update(&UpdateOptions::default(), &NoProgress).unwrap();
        update();
        let fresh = |searcher: &tantivy::Searcher| {
            FileMap::build(searcher, &index.fields, &index.layout.index_dir).unwrap()
        };
        fn live(map: &FileMap) -> Vec<&str> {
            let mut files: Vec<&str> = map
                .of_doc
                .iter()
                .flatten()
                .filter(|&&f| f != u32::MAX)
                .map(|&f| map.files[f as usize].as_str())
                .collect();
            files.sort();
            files.dedup();
            files
        }
        let first = index.file_map(&index.reader.searcher()).unwrap();
        assert_eq!(live(&first), ["a.py", "b.py"]);
        // Nothing committed since: the same grouping, not built again.
        assert!(Arc::ptr_eq(&first, &index.file_map(&index.reader.searcher()).unwrap()));

        // Edited, added and deleted files: a new segment and deletions in the old one.
        write("b.py", "def beta():\n    return 20\n");
        write("c.py", "def delta():\n    return 4\n");
        std::fs::remove_file(root.join("a.py")).unwrap();
        update();
        let searcher = index.reader.searcher();
        let second = index.file_map(&searcher).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(second.fits(&searcher) && !first.fits(&searcher));
        assert_eq!(*second, fresh(&searcher));
        assert_eq!(live(&second), ["b.py", "c.py"]);
    }
}
