//! The one search entry point. `sift search`, `sift eval`, the language server's `sift/search`
//! and `workspace/symbol`, and the agent's and MCP's search tools all call [`search`]; what
//! differs between them is only how they show the results.
//!
//! Per workspace, the on-disk index and the unsaved buffers are searched as one corpus
//! ([`sift_indexer::Sources`]: BM25 with the union's statistics, the buffers' chunks embedded
//! by the same model), so their scores merge by value. Several workspaces are merged by rank
//! (the first of each, then the second of each, …): their scores come from different corpora
//! and are not comparable, and rank interleaving gives each workspace's best hits a place at
//! the top whatever their scale.

use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;
use sift_indexer::search::Terms;
use sift_indexer::{Asides, Fusion, Hit, SearchOptions, Sources};

use crate::workspace::Workspace;
use crate::{Error, Result};

/// How to rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 only.
    Lexical,
    /// Embeddings only.
    Semantic,
    /// Both rankings fused.
    Hybrid,
}

impl Mode {
    /// The mode's name, as the CLI and the protocol spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lexical => "lexical",
            Mode::Semantic => "semantic",
            Mode::Hybrid => "hybrid",
        }
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Mode, String> {
        match s {
            "lexical" => Ok(Mode::Lexical),
            "semantic" => Ok(Mode::Semantic),
            "hybrid" => Ok(Mode::Hybrid),
            other => {
                Err(format!("unknown mode {other:?}: use \"lexical\", \"semantic\" or \"hybrid\""))
            }
        }
    }
}

/// A search.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// What to look for.
    pub text: &'a str,
    /// The mode asked for; `None`: hybrid where there are vectors, else lexical, silently.
    pub mode: Option<Mode>,
    /// How many results.
    pub k: usize,
    /// At most this many results from one file (with [`Query::by_file`]: at most this many
    /// chunks in a file's result).
    pub max_per_file: Option<usize>,
    /// One result per file (the default): `k` files, each placed by its best chunk, with the
    /// file's other chunks that matched in [`Found::more`]. `false`: every chunk is a result
    /// of its own, and a few files can fill the list.
    pub by_file: bool,
    /// What semantic and hybrid search leave out unless the query asks for it
    /// ([`sift_indexer::aside`]); `None`: each workspace's ([`Workspace::leave_aside`], from
    /// `[search] leave_aside`). Lexical search and hybrid lookups of identifiers keep it.
    pub leave_aside: Option<Asides>,
    /// How hybrid search fuses (`sift eval` tries others).
    pub fusion: Fusion,
}

impl<'a> Query<'a> {
    /// `text` in the default mode, the first `k` files.
    pub fn new(text: &'a str, k: usize) -> Query<'a> {
        Query {
            text,
            mode: None,
            k,
            max_per_file: None,
            by_file: true,
            leave_aside: None,
            fusion: Fusion::default(),
        }
    }

    /// `text` in the default mode, the first `k` chunks, however many come from one file.
    pub fn chunks(text: &'a str, k: usize) -> Query<'a> {
        Query { by_file: false, ..Query::new(text, k) }
    }

    /// This query as a front end's options ask for it: chunk by chunk when `chunks` is set or
    /// `max_per_file` limits the chunks of a file, else each file once.
    pub fn listed(self, chunks: bool, max_per_file: Option<usize>) -> Query<'a> {
        Query { max_per_file, by_file: !chunks && max_per_file.is_none(), ..self }
    }
}

/// A result and the workspace it was found in.
#[derive(Debug, Clone)]
pub struct Found {
    /// The workspace's root.
    pub root: PathBuf,
    /// The chunk (a file's best, with [`Query::by_file`]); `hit.unsaved` says whether it comes
    /// from an unsaved buffer.
    pub hit: Hit,
    /// With [`Query::by_file`]: the file's other chunks that matched (among the first
    /// [`sift_indexer::FILE_POOL`] × k of the ranking), best first; otherwise empty.
    pub more: Vec<Hit>,
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct Results {
    /// Best first.
    pub hits: Vec<Found>,
    /// The mode used: `hybrid` falls back to `lexical` where no workspace has vectors.
    pub mode: Mode,
    /// Why hybrid search fell back to lexical, when it did.
    pub fallback: Option<String>,
}

/// Searches `workspaces` (see the module doc); the query's words are checked first (an
/// [`sift_indexer::Error::EmptyQuery`] when it has none, except in semantic mode).
pub fn search(workspaces: &[&Workspace], query: &Query<'_>) -> Result<Results> {
    let wanted = query.mode.unwrap_or(Mode::Hybrid);
    // Tokenized once, for every ranking of every workspace.
    let terms = Terms::new(query.text);
    if wanted != Mode::Semantic {
        terms.require()?;
    }
    let mut lists = Vec::with_capacity(workspaces.len());
    let mut used = Mode::Lexical;
    let mut why_not: Option<String> = None;
    for ws in workspaces {
        let opts = SearchOptions {
            k: query.k,
            max_per_file: query.max_per_file,
            files: query.by_file,
            leave_aside: query.leave_aside.unwrap_or(ws.leave_aside),
        };
        let (hits, mode) = match search_one(ws, query, &terms, wanted, &opts)? {
            Some(found) => found,
            None => {
                why_not.get_or_insert_with(|| unavailable(ws));
                if wanted == Mode::Semantic {
                    continue;
                }
                (lexical(ws, &terms, &opts)?, Mode::Lexical)
            }
        };
        if mode != Mode::Lexical {
            used = mode;
        }
        lists.push(match query.by_file {
            true => by_file(&ws.root, hits),
            false => hits
                .into_iter()
                .map(|hit| Found { root: ws.root.clone(), hit, more: Vec::new() })
                .collect(),
        });
    }
    if wanted == Mode::Semantic && used != Mode::Semantic {
        let why = why_not.unwrap_or_else(|| "no workspace is open".into());
        return Err(Error::SemanticUnavailable(why));
    }
    let fallback = (wanted == Mode::Hybrid && used == Mode::Lexical)
        .then(|| why_not.unwrap_or_else(|| "no workspace is open".into()));
    Ok(Results { hits: interleave(lists, query.k), mode: used, fallback })
}

/// Records, in each workspace's record of fates, that `results` of `query` were shown to the
/// user (the CLI's `sift search`, the editor's `sift/search`, MCP's search tool call this once
/// their answer is out; the agent's own searches and `sift eval`'s are not shown to anyone).
/// The query's words are kept only with `[feedback] text = true`.
pub fn shown(workspaces: &[&Workspace], query: &Query<'_>, results: &Results) {
    for ws in workspaces {
        let mine: Vec<&Found> = results.hits.iter().filter(|f| f.root == ws.root).collect();
        let top = mine.first().map(|f| f.hit.path.as_str());
        list_shown(&ws.recorder, query.text, mine.len(), top);
    }
}

/// Records that a list of `count` results for the query `text`, `top` first, was shown.
pub(crate) fn list_shown(
    recorder: &crate::fates::Recorder,
    text: &str,
    count: usize,
    top: Option<&str>,
) {
    use crate::fates::{Event, Fate, Kind, text_id};
    if !recorder.is_on() {
        return;
    }
    let event = Event::new(Kind::Search, text_id(text), Fate::Shown).count(count).text(text);
    recorder.record(match top {
        Some(path) => event.path(path),
        None => event,
    });
}

/// Why a workspace has no semantic search right now.
fn unavailable(ws: &Workspace) -> String {
    match ws.semantic.unavailable() {
        Some(why) => why.to_string(),
        None => "no embeddings yet: they are being computed, try again shortly".into(),
    }
}

/// Lexical search keeps every kind of content.
fn lexical(ws: &Workspace, terms: &Terms, opts: &SearchOptions) -> Result<Vec<Hit>> {
    let overlay = ws.overlay();
    let opts = SearchOptions { leave_aside: Asides::NONE, ..opts.clone() };
    Ok(Sources::new(&ws.index, Some(&overlay)).lexical(terms, &opts)?)
}

/// One workspace in `wanted` mode: `None` when that needs vectors it does not have.
fn search_one(
    ws: &Workspace,
    query: &Query<'_>,
    terms: &Terms,
    wanted: Mode,
    opts: &SearchOptions,
) -> Result<Option<(Vec<Hit>, Mode)>> {
    if wanted == Mode::Lexical {
        return Ok(Some((lexical(ws, terms, opts)?, Mode::Lexical)));
    }
    // One model's vectors for the whole search: the upgrade's once complete, else the first's.
    let semantic = ws.semantic.active();
    let Some(vectors) = semantic.vectors().filter(|v| !v.is_empty()) else { return Ok(None) };
    let (Some(model), Some(query_vec)) = (semantic.model(), semantic.query_vector(query.text)?)
    else {
        return Ok(None);
    };
    let mut overlay = ws.overlay();
    // The buffers' chunks that changed since they were last embedded (a few: the one being
    // typed in) get vectors now, so the semantic ranking sees the text as the user does.
    if let Err(e) = overlay.embed_missing(model.embedder.as_ref(), &|k| vectors.contains_key(k)) {
        tracing::warn!("cannot embed the unsaved buffers: {e}");
    }
    let sources = Sources::new(&ws.index, Some(&overlay));
    let hits = match wanted {
        Mode::Semantic => sources.semantic(&vectors, terms, &query_vec, opts)?,
        // The lexical weight measured for this model (sift_indexer::MODEL_LEXICAL_WEIGHTS).
        _ => {
            let fusion = query.fusion.for_model(model.embedder.id());
            sources.hybrid(&vectors, terms, &query_vec, opts, &fusion)?
        }
    };
    Ok(Some((hits, wanted)))
}

/// One result per file of `hits` (best first), in order of each file's best hit; the file's
/// later hits go to its [`Found::more`].
fn by_file(root: &std::path::Path, hits: Vec<Hit>) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut at = std::collections::HashMap::<String, usize>::new();
    for hit in hits {
        match at.get(&hit.path) {
            Some(&i) => out[i].more.push(hit),
            None => {
                at.insert(hit.path.clone(), out.len());
                out.push(Found { root: root.to_path_buf(), hit, more: Vec::new() });
            }
        }
    }
    out
}

/// Merges per-workspace rankings by rank: every list's first, then every list's second, …;
/// at most `k`.
fn interleave(lists: Vec<Vec<Found>>, k: usize) -> Vec<Found> {
    if lists.len() == 1 {
        return lists.into_iter().flatten().take(k).collect();
    }
    let mut iters: Vec<_> = lists.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(k);
    while out.len() < k {
        let before = out.len();
        for it in &mut iters {
            if let Some(found) = it.next() {
                out.push(found);
                if out.len() == k {
                    break;
                }
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(root: &str, path: &str) -> Found {
        let hit = Hit {
            path: path.into(),
            start_line: 1,
            end_line: 1,
            score: 0.0,
            symbol: None,
            kind: "function".into(),
            container: None,
            language: "rust".into(),
            match_line: 1,
            snippet: String::new(),
            key: None,
            unsaved: false,
            aside: None,
        };
        Found { root: root.into(), hit, more: Vec::new() }
    }

    #[test]
    fn workspaces_are_merged_by_rank_not_by_score() {
        let a = vec![found("a", "1"), found("a", "2"), found("a", "3")];
        let b = vec![found("b", "1")];
        let merged = interleave(vec![a, b], 3);
        let order: Vec<(String, &str)> =
            merged.iter().map(|f| (f.root.display().to_string(), f.hit.path.as_str())).collect();
        assert_eq!(order, [("a".into(), "1"), ("b".into(), "1"), ("a".into(), "2")]);
    }

    #[test]
    fn modes_parse_and_print_alike() {
        for mode in [Mode::Lexical, Mode::Semantic, Mode::Hybrid] {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
        }
        assert!("fuzzy".parse::<Mode>().unwrap_err().contains("lexical"));
    }
}
