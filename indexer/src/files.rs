//! File-level BM25: each file scored as one document, its chunks' term frequencies and lengths
//! added up, with a match in the path counted once per file.
//!
//! Chunk-level BM25 finds the chunk that says most of a query; a query that describes a change
//! ("Added support for pyformat style parameters on SQLite") is often answered by a file whose
//! chunks each say part of it, and whose path says the rest. Hybrid search adds this file score
//! to every chunk of the file ([`crate::semantic::Fusion::file_weight`]).
//!
//! Computed from the index as it is, with no extra data on disk: the `path` field's terms name
//! every file and their postings list its chunks; the content field's fieldnorms give their
//! lengths. Files for which `skip` is true are left out (an overlay's files on disk).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use tantivy::postings::Postings;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Searcher, TERMINATED, Term};

use crate::error::{Error, Result};
use crate::index::Fields;

/// BM25's term-frequency saturation, as tantivy's.
const K1: f32 = 1.2;
/// BM25's length normalisation, as tantivy's.
const B: f32 = 0.75;
/// Weight of a query word in a file's path, relative to its BM25 weight in the content.
pub const FILE_PATH_BOOST: f32 = 1.5;

/// One searcher's documents grouped by file.
pub struct Part<'a> {
    /// The searcher.
    pub searcher: &'a Searcher,
    /// Its schema's fields.
    pub fields: &'a Fields,
    /// Where it lives, for error messages.
    pub where_: &'a Path,
    /// Files of this searcher to leave out.
    pub skip: &'a dyn Fn(&str) -> bool,
}

/// File-level BM25 scores of `tokens` (search tokens: see [`crate::search::search_tokens`])
/// over the files of `parts` taken as one corpus; files that match no token are absent.
pub fn file_scores(parts: &[Part<'_>], tokens: &[String]) -> Result<HashMap<String, f32>> {
    let mut files: Vec<String> = Vec::new();
    let mut index_of: HashMap<String, u32> = HashMap::new();
    let mut lengths: Vec<u64> = Vec::new();
    // Per part, per segment: the file of each document (u32::MAX: none, deleted or skipped).
    let mut doc_files: Vec<Vec<Vec<u32>>> = Vec::with_capacity(parts.len());
    for part in parts {
        let tantivy_err = |e| Error::tantivy(part.where_, e);
        let io_err = |e: std::io::Error| Error::tantivy(part.where_, e.into());
        let mut per_segment = Vec::new();
        for segment in part.searcher.segment_readers() {
            let mut of_doc = vec![u32::MAX; segment.max_doc() as usize];
            let paths = segment.inverted_index(part.fields.path).map_err(tantivy_err)?;
            let norms = segment.get_fieldnorms_reader(part.fields.content).map_err(tantivy_err)?;
            let alive = segment.alive_bitset();
            let mut terms = paths.terms().stream().map_err(io_err)?;
            while terms.advance() {
                let Ok(path) = std::str::from_utf8(terms.key()) else { continue };
                if (part.skip)(path) {
                    continue;
                }
                let mut postings = paths
                    .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)
                    .map_err(io_err)?;
                let mut idx = None;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        let i = *idx.get_or_insert_with(|| {
                            *index_of.entry(path.to_string()).or_insert_with(|| {
                                files.push(path.to_string());
                                lengths.push(0);
                                (files.len() - 1) as u32
                            })
                        });
                        of_doc[doc as usize] = i;
                        lengths[i as usize] += u64::from(norms.fieldnorm(doc));
                    }
                    doc = postings.advance();
                }
            }
            per_segment.push(of_doc);
        }
        doc_files.push(per_segment);
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
        for (part, per_segment) in parts.iter().zip(&doc_files) {
            let io_err = |e: std::io::Error| Error::tantivy(part.where_, e.into());
            for (segment, of_doc) in part.searcher.segment_readers().iter().zip(per_segment) {
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
                        let file = of_doc[doc as usize];
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
    Ok(files.into_iter().zip(scores).filter(|(_, s)| *s > 0.0).collect())
}
