//! Lexical search: BM25 over chunk text, symbol names, enclosing names and paths, all analysed
//! with the code tokenizer; each hit carries the lines that best explain why it matched.

use std::collections::HashSet;

use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{TantivyDocument, Term};

use std::path::Path;

use crate::aside::{Aside, Asides, classify};
use crate::error::{Error, Result};
use crate::index::{CodeIndex, Fields};
use crate::tokenizer::tokenize;

/// Weight of a match in the symbol name, relative to one in the chunk text.
pub const SYMBOL_BOOST: f32 = 3.0;
/// Weight of a match in the path.
pub const PATH_BOOST: f32 = 1.5;
/// Weight of a match in the enclosing symbol's name.
pub const CONTAINER_BOOST: f32 = 1.0;

/// How to search.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// How many hits to return.
    pub k: usize,
    /// At most this many hits from one file (`None`: no limit).
    pub max_per_file: Option<usize>,
    /// `k` counts files, not hits: the hits of the first `k` files of the ranking (within
    /// `max_per_file`), read [`FILE_POOL`] times `k` deep, so that a file's place is its best
    /// hit's and its other hits come along (the list a user is shown, grouped by file).
    pub files: bool,
    /// Chunks of these kinds ([`crate::aside`]) are left out unless the query asks for them
    /// (natural-language ranking; lexical search keeps them).
    pub leave_aside: Asides,
}

impl SearchOptions {
    /// The first `k` hits, however many come from one file.
    pub fn top(k: usize) -> SearchOptions {
        SearchOptions { k, max_per_file: None, files: false, leave_aside: Asides::NONE }
    }

    /// The hits of the first `k` files (see [`SearchOptions::files`]).
    pub fn files(k: usize) -> SearchOptions {
        SearchOptions { files: true, ..SearchOptions::top(k) }
    }

    /// How deep a ranking is read before its filters apply: `k`, or for a list of files
    /// [`FILE_POOL`] times `k`.
    pub(crate) fn depth(&self) -> usize {
        if self.files { self.k.max(1) * FILE_POOL } else { self.k.max(1) }
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions::top(10)
    }
}

/// For a list of files ([`SearchOptions::files`]): each ranking is read this many times `k`
/// deep, which is where a file's other hits are found (hybrid search reads
/// [`crate::Fusion::depth`], 50, which is this for the default ten).
pub const FILE_POOL: usize = 5;

/// What a list keeps of a ranking read best first: `opts.k` hits, or every hit of the first
/// `opts.k` files ([`SearchOptions::files`]), at most `opts.max_per_file` from one file. The
/// one rule of every list's cut (lexical, semantic, fused, and the merge of the index with the
/// unsaved buffers).
pub(crate) struct Keep<'o> {
    opts: &'o SearchOptions,
    per_file: std::collections::HashMap<String, usize>,
    hits: usize,
}

impl<'o> Keep<'o> {
    pub(crate) fn new(opts: &'o SearchOptions) -> Keep<'o> {
        Keep { opts, per_file: std::collections::HashMap::new(), hits: 0 }
    }

    /// Whether the next hit, from `path`, is kept (and counts it when it is).
    pub(crate) fn admit(&mut self, path: &str) -> bool {
        if self.full() {
            return false;
        }
        let files = self.per_file.len();
        let n = match self.per_file.get_mut(path) {
            Some(n) => n,
            None if self.opts.files && files >= self.opts.k => return false,
            None => self.per_file.entry(path.to_string()).or_default(),
        };
        if self.opts.max_per_file.is_some_and(|max| *n >= max) {
            return false;
        }
        *n += 1;
        self.hits += 1;
        true
    }

    /// No later hit can be kept: `k` hits (a list of hits), or never (a list of files keeps
    /// its files' later hits to the end of what was read).
    pub(crate) fn full(&self) -> bool {
        !self.opts.files && self.hits >= self.opts.k
    }

    /// The list has what it asked for: `k` hits, or hits from `k` files.
    pub(crate) fn satisfied(&self) -> bool {
        if self.opts.files { self.per_file.len() >= self.opts.k } else { self.full() }
    }

    /// `hits` (best first) cut by this rule.
    pub(crate) fn cut(opts: &SearchOptions, hits: Vec<Hit>) -> Vec<Hit> {
        let mut keep = Keep::new(opts);
        hits.into_iter().filter(|h| keep.admit(&h.path)).collect()
    }
}

/// One search result. Its JSON form is the `sift search --json` contract: keep it stable.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// First line of the chunk, 1-based.
    pub start_line: u64,
    /// Last line of the chunk, 1-based, inclusive.
    pub end_line: u64,
    /// Relevance; higher is better. Comparable within one result list only.
    pub score: f32,
    /// The defined symbol, when the chunk is a definition.
    pub symbol: Option<String>,
    /// What the chunk is (`function`, `method`, `class`, `top-level`, `lines`…).
    pub kind: String,
    /// The enclosing symbol (a method's class or impl), when there is one.
    pub container: Option<String>,
    /// Language or text label (`rust`, `python`, `markdown`, `text`…).
    pub language: String,
    /// The line that matched best, 1-based.
    pub match_line: u64,
    /// Up to three lines around `match_line`, each cut at 200 characters.
    pub snippet: String,
    /// The chunk's key in the vector cache (not part of the JSON contract).
    #[serde(skip)]
    pub key: Option<u64>,
    /// True when the chunk comes from an unsaved editor buffer (an [`crate::Overlay`]), not
    /// from the file on disk (not part of the JSON contract).
    #[serde(skip)]
    pub unsaved: bool,
    /// What kind of content the chunk is when natural-language ranking leaves it aside
    /// ([`crate::aside`]): `"translation"`, `"lock"`, `"minified"`, `"vendored"`,
    /// `"generated"`; absent for everything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aside: Option<Aside>,
}

impl CodeIndex {
    /// Searches the index for `query`; best first.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>> {
        let terms = Terms::new(query);
        search_reader(&self.reader, &self.fields, &self.layout.index_dir, &terms, opts, &|_| false)
    }
}

/// The tokens of a query, deduplicated in order; an error when there are none.
pub fn query_tokens(query: &str) -> Result<Vec<String>> {
    let mut tokens = tokenize(query);
    let mut seen = HashSet::new();
    tokens.retain(|t| seen.insert(t.clone()));
    if tokens.is_empty() {
        return Err(Error::EmptyQuery(query.to_string()));
    }
    Ok(tokens)
}

/// A query as the index searches it: its text and its search tokens ([`search_tokens`]),
/// tokenized once and handed to every ranking of one search (lexical, semantic snippets,
/// file-level scores, fusion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    text: String,
    tokens: Vec<String>,
}

impl Terms {
    /// The terms of `text` (no tokens when it has no words).
    pub fn new(text: &str) -> Terms {
        Terms { text: text.to_owned(), tokens: search_tokens(text).unwrap_or_default() }
    }

    /// The query as typed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its search tokens; empty when it has no words.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Its search tokens, or [`Error::EmptyQuery`] when it has none.
    pub fn require(&self) -> Result<&[String]> {
        if self.tokens.is_empty() {
            return Err(Error::EmptyQuery(self.text.clone()));
        }
        Ok(&self.tokens)
    }
}

impl From<&str> for Terms {
    fn from(text: &str) -> Terms {
        Terms::new(text)
    }
}

/// English function words ("where", "do", "we", "the", …) that carry no meaning in a question
/// asked of code, and match everywhere (`sql/where.py` answered every "where is…" question).
const QUESTION_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "could", "did", "do",
    "does", "each", "for", "from", "get", "gets", "got", "how", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "of", "on", "or", "our", "should", "so", "some", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "us", "was", "we",
    "what", "when", "where", "which", "who", "why", "with", "would", "you",
];

/// The tokens a query is searched with: [`query_tokens`], less [`QUESTION_WORDS`] when the
/// query is a sentence (four words or more) and something else is left. A short query keeps
/// every word: `where` alone, or `is not`, may be exactly what someone looks for.
pub fn search_tokens(query: &str) -> Result<Vec<String>> {
    let tokens = query_tokens(query)?;
    let words = query.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
    if words.count() < 4 {
        return Ok(tokens);
    }
    let kept: Vec<String> =
        tokens.iter().filter(|t| !QUESTION_WORDS.contains(&String::as_str(t))).cloned().collect();
    Ok(if kept.is_empty() { tokens } else { kept })
}

/// Runs a query against any reader with sift's schema, scored by that reader's own BM25
/// statistics.
pub(crate) fn search_reader(
    reader: &tantivy::IndexReader,
    f: &Fields,
    where_: &Path,
    query: &Terms,
    opts: &SearchOptions,
    skip: &dyn Fn(&str) -> bool,
) -> Result<Vec<Hit>> {
    let searcher = reader.searcher();
    search_searcher(&searcher, &searcher, f, where_, query, opts, skip, None)
}

/// The BM25 query of sift's schema for these search tokens: each token in the content, the
/// symbol name, the path words and the container name, weighted.
fn lexical_query(f: &Fields, tokens: &[String]) -> BooleanQuery {
    let term_query = |field, token: &str, boost: f32| -> Box<dyn Query> {
        let q = TermQuery::new(Term::from_field_text(field, token), IndexRecordOption::WithFreqs);
        if boost == 1.0 { Box::new(q) } else { Box::new(BoostQuery::new(Box::new(q), boost)) }
    };
    let clauses: Vec<(Occur, Box<dyn Query>)> = tokens
        .iter()
        .map(|t| {
            let per_token: Vec<(Occur, Box<dyn Query>)> = vec![
                (Occur::Should, term_query(f.content, t, 1.0)),
                (Occur::Should, term_query(f.symbol, t, SYMBOL_BOOST)),
                (Occur::Should, term_query(f.path_words, t, PATH_BOOST)),
                (Occur::Should, term_query(f.container, t, CONTAINER_BOOST)),
            ];
            (Occur::Should, Box::new(BooleanQuery::new(per_token)) as Box<dyn Query>)
        })
        .collect();
    BooleanQuery::new(clauses)
}

/// Leaves a document out before it is read (what [`crate::files::FileMap`] knows leaves aside).
pub(crate) type Early<'a> = Option<&'a dyn Fn(tantivy::DocAddress) -> bool>;

/// Runs a query against one searcher, scoring with the BM25 statistics of `stats` (the searcher
/// itself, or a corpus it is part of: see [`crate::sources`]); `early` leaves documents out
/// before they are read.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_searcher(
    searcher: &tantivy::Searcher,
    stats: &dyn Bm25StatisticsProvider,
    f: &Fields,
    where_: &Path,
    query: &Terms,
    opts: &SearchOptions,
    skip: &dyn Fn(&str) -> bool,
    early: Early<'_>,
) -> Result<Vec<Hit>> {
    let tokens = query.require()?;
    let query = lexical_query(f, tokens);
    let mut fetch = opts.depth();
    let wanted: HashSet<&str> = tokens.iter().map(String::as_str).collect();
    loop {
        let mut top = searcher
            .search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(fetch).order_by_score(),
                stats,
            )
            .map_err(|e| Error::tantivy(where_, e))?;
        let exhausted = top.len() < fetch;
        if let Some(early) = early {
            top.retain(|(_, addr)| !early(*addr));
        }
        let (hits, satisfied) = collect_hits(searcher, f, where_, top, opts, skip, &wanted)?;
        if satisfied {
            return Ok(hits);
        }
        // Filters left too few: look further down the ranking.
        if exhausted || fetch >= 1 << 16 {
            return Ok(hits);
        }
        fetch *= 4;
    }
}

/// Turns scored documents (best first) into the hits `opts` asks for ([`Keep`]), leaving out
/// files for which `skip` is true; and whether that is all it asked for.
pub(crate) fn collect_hits(
    searcher: &tantivy::Searcher,
    f: &Fields,
    where_: &Path,
    top: Vec<(f32, tantivy::DocAddress)>,
    opts: &SearchOptions,
    skip: &dyn Fn(&str) -> bool,
    wanted: &HashSet<&str>,
) -> Result<(Vec<Hit>, bool)> {
    let mut keep = Keep::new(opts);
    let mut hits = Vec::with_capacity(opts.k);
    let tokens: Vec<&str> = wanted.iter().copied().collect();
    for (score, addr) in top {
        let doc: TantivyDocument = searcher.doc(addr).map_err(|e| Error::tantivy(where_, e))?;
        let path = doc.get_first(f.path).and_then(|v| v.as_str()).unwrap_or_default();
        if skip(path) {
            continue;
        }
        // Judged before the hit (its snippet) is made, as the per-file limit always was.
        let aside = doc_aside(f, &doc, path);
        if opts.leave_aside.leaves_out(aside, path, &tokens) || !keep.admit(path) {
            continue;
        }
        let mut hit = hit_from_doc(f, &doc, score, wanted, aside);
        hit.key = searcher
            .segment_reader(addr.segment_ord)
            .fast_fields()
            .u64("key")
            .ok()
            .and_then(|column| column.first(addr.doc_id));
        hits.push(hit);
        if keep.full() {
            break;
        }
    }
    Ok((hits, keep.satisfied()))
}

/// What kind of aside content ([`crate::aside`]) the stored chunk document of `path` is.
pub(crate) fn doc_aside(f: &Fields, doc: &TantivyDocument, path: &str) -> Option<Aside> {
    let language = doc.get_first(f.lang).and_then(|v| v.as_str()).unwrap_or_default();
    let content = doc.get_first(f.content).and_then(|v| v.as_str()).unwrap_or_default();
    let start_line = doc.get_first(f.start_line).and_then(|v| v.as_u64()).unwrap_or(0);
    classify(path, language, content, start_line <= 1)
}

/// Makes a [`Hit`] of a stored chunk document; `wanted` (query tokens) picks the snippet line;
/// `aside` is what [`doc_aside`] said of it.
pub(crate) fn hit_from_doc(
    f: &Fields,
    doc: &TantivyDocument,
    score: f32,
    wanted: &HashSet<&str>,
    aside: Option<Aside>,
) -> Hit {
    let text = |field| doc.get_first(field).and_then(|v| v.as_str()).map(str::to_string);
    let num = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0);
    let start_line = num(f.start_line);
    let content = doc.get_first(f.content).and_then(|v| v.as_str()).unwrap_or_default();
    let (match_line, snippet) = snippet(content, start_line, wanted);
    Hit {
        aside,
        path: text(f.path).unwrap_or_default(),
        start_line,
        end_line: num(f.end_line),
        score,
        symbol: text(f.symbol),
        kind: text(f.kind).unwrap_or_default(),
        container: text(f.container),
        language: text(f.lang).unwrap_or_default(),
        match_line,
        snippet,
        key: None,
        unsaved: false,
    }
}

const SNIPPET_LINE_CHARS: usize = 200;

/// Picks the line of `content` holding the most distinct query tokens and returns its number
/// with up to one line of context on each side.
pub fn snippet(content: &str, start_line: u64, wanted: &HashSet<&str>) -> (u64, String) {
    let lines: Vec<&str> = content.lines().collect();
    let mut best = (0usize, None::<usize>);
    for (i, line) in lines.iter().enumerate() {
        let mut found = HashSet::new();
        for token in tokenize(line) {
            if wanted.contains(token.as_str()) {
                found.insert(token);
            }
        }
        if found.len() > best.0 {
            best = (found.len(), Some(i));
        }
    }
    let center =
        best.1.unwrap_or_else(|| lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0));
    let from = if best.1.is_some() { center.saturating_sub(1) } else { center };
    let to = if best.1.is_some() {
        (center + 1).min(lines.len().saturating_sub(1))
    } else {
        (center + 2).min(lines.len().saturating_sub(1))
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().take(to + 1).skip(from) {
        if i > from {
            out.push('\n');
        }
        out.push_str(cut(line, SNIPPET_LINE_CHARS));
    }
    (start_line + center as u64, out)
}

fn cut(line: &str, max_chars: usize) -> &str {
    match line.char_indices().nth(max_chars) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_words_leave_sentences_but_not_short_queries() {
        let tokens = search_tokens("where do we stop other sites from framing our pages").unwrap();
        assert_eq!(tokens, ["stop", "other", "site", "framing", "page"]);
        // Short queries keep every word: `where` may be what is looked for.
        assert_eq!(search_tokens("where clause").unwrap(), ["where", "clause"]);
        assert_eq!(search_tokens("is_valid for").unwrap(), ["is_valid", "is", "valid", "for"]);
        // A sentence of nothing but question words keeps them.
        assert_eq!(search_tokens("where is it there").unwrap().len(), 4);
        assert!(search_tokens("  ").is_err());
    }

    #[test]
    fn snippet_centres_on_the_best_line() {
        let content = "fn a() {\n    let x = 1;\n    parse_config(path)\n}\n";
        let wanted: HashSet<&str> = ["parse", "config"].into_iter().collect();
        let (line, text) = snippet(content, 10, &wanted);
        assert_eq!(line, 12);
        assert_eq!(text, "    let x = 1;\n    parse_config(path)\n}");
    }

    #[test]
    fn snippet_without_a_matching_line_shows_the_start() {
        let content = "\nclass Foo:\n    pass\n    x = 2\n";
        let wanted: HashSet<&str> = ["zzz"].into_iter().collect();
        let (line, text) = snippet(content, 1, &wanted);
        assert_eq!(line, 2);
        assert_eq!(text, "class Foo:\n    pass\n    x = 2");
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let line = "é".repeat(300);
        assert_eq!(cut(&line, SNIPPET_LINE_CHARS).chars().count(), SNIPPET_LINE_CHARS);
    }
}
