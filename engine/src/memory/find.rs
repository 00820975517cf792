//! Retrieval of notes: BM25 over title and body with the index's own code tokenizer, cosine
//! similarity with the workspace's embedding model when one is loaded, the two rankings fused by
//! the search's own [`sift_indexer::hybrid::fuse`], then filtered by scope. Fresh notes rank
//! before stale ones, and notes citing one of the asked-about files before the others.
//!
//! Notes are few (hundreds, not millions), so they are scored in memory on every question; the
//! embedding of each note is kept by [`NoteVectors`] for the life of the process.

use std::collections::HashMap;
use std::sync::Mutex;

use globset::{Glob, GlobSetBuilder};
use sift_indexer::{Fusion, Hit, SearchOptions, TextKind};

use super::check::{State, States};
use super::note::Note;
use crate::embeddings::Semantic;

/// A question to the notes.
#[derive(Debug, Clone, Default)]
pub struct Ask<'a> {
    /// What it is about (a task, a query, a diff's summary).
    pub text: &'a str,
    /// Files it is about: notes scoped elsewhere are left out; notes citing these come first.
    pub paths: &'a [String],
    /// How many notes.
    pub k: usize,
    /// Leave stale notes out.
    pub fresh_only: bool,
}

/// A note that answers.
#[derive(Debug, Clone)]
pub struct Answer<'n> {
    /// The note.
    pub note: &'n Note,
    /// Its state, when it was checked.
    pub state: Option<&'n State>,
    /// The fused score (comparable within one answer list).
    pub score: f32,
}

impl Answer<'_> {
    /// Whether the note is known to be stale.
    pub fn is_stale(&self) -> bool {
        self.state.is_some_and(|s| !s.is_fresh())
    }
}

/// Note embeddings by model and note text (kept for the life of the process).
#[derive(Debug, Default)]
pub struct NoteVectors {
    cache: Mutex<HashMap<(String, String), Vec<f32>>>,
}

/// The lowest cosine similarity at which a note counts as related without a shared word.
const MIN_SIMILARITY: f32 = 0.3;

impl NoteVectors {
    fn vectors(&self, semantic: &Semantic, notes: &[Note]) -> Option<Vec<Vec<f32>>> {
        let model = semantic.model()?;
        let id = model.embedder.id().to_string();
        let keys: Vec<(String, String)> =
            notes.iter().map(|n| (id.clone(), n.search_text())).collect();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let missing: Vec<&str> =
            keys.iter().filter(|k| !cache.contains_key(*k)).map(|k| k.1.as_str()).collect();
        if !missing.is_empty() {
            let vectors = model.embedder.embed(&missing, TextKind::Document).ok()?;
            if vectors.len() != missing.len() {
                return None;
            }
            let owned: Vec<String> = missing.iter().map(|s| s.to_string()).collect();
            for (text, v) in owned.into_iter().zip(vectors) {
                cache.insert((id.clone(), text), v);
            }
        }
        keys.iter().map(|k| cache.get(k).cloned()).collect()
    }
}

fn hit(slug: &str, score: f32) -> Hit {
    Hit {
        path: slug.to_string(),
        start_line: 1,
        end_line: 1,
        score,
        symbol: None,
        kind: "note".into(),
        container: None,
        language: "markdown".into(),
        match_line: 1,
        snippet: String::new(),
        key: None,
        unsaved: false,
        aside: None,
    }
}

/// BM25 (k1 1.2, b 0.75) of each note for the query's tokens; notes sharing no token are left
/// out.
fn bm25(notes: &[Note], query: &str) -> Vec<(usize, f32)> {
    let Ok(wanted) = sift_indexer::search::search_tokens(query) else { return Vec::new() };
    let docs: Vec<Vec<String>> =
        notes.iter().map(|n| sift_indexer::tokenizer::tokenize(&n.search_text())).collect();
    let n = docs.len() as f32;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f32 / n.max(1.0);
    let mut scores = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let mut score = 0.0;
        for term in &wanted {
            let tf = doc.iter().filter(|t| *t == term).count() as f32;
            if tf == 0.0 {
                continue;
            }
            let df = docs.iter().filter(|d| d.contains(term)).count() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * doc.len() as f32 / avg.max(1.0)));
        }
        if score > 0.0 {
            scores.push((i, score));
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores
}

fn in_scope(note: &Note, paths: &[String]) -> bool {
    if note.front.scope.is_empty() || paths.is_empty() {
        return true;
    }
    let mut set = GlobSetBuilder::new();
    for glob in &note.front.scope {
        match Glob::new(glob) {
            Ok(g) => {
                set.add(g);
            }
            Err(_) => return true,
        }
    }
    let Ok(set) = set.build() else { return true };
    paths.iter().any(|p| set.is_match(p))
}

/// The notes that answer `ask`, best first (see the module documentation).
pub fn find<'n>(
    notes: &'n [Note],
    states: &'n States,
    ask: &Ask<'_>,
    semantic: Option<(&Semantic, &NoteVectors)>,
) -> Vec<Answer<'n>> {
    if notes.is_empty() || ask.k == 0 {
        return Vec::new();
    }
    let lexical: Vec<Hit> =
        bm25(notes, ask.text).into_iter().map(|(i, s)| hit(&notes[i].slug, s)).collect();
    let mut similar = Vec::new();
    if let Some((semantic, cache)) = semantic
        && let Ok(Some(q)) = semantic.query_vector(ask.text)
        && let Some(vectors) = cache.vectors(semantic, notes)
    {
        let mut scored: Vec<(usize, f32)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (i, v.iter().zip(q.iter()).map(|(a, b)| a * b).sum::<f32>()))
            .filter(|(_, s)| *s >= MIN_SIMILARITY)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        similar = scored.into_iter().map(|(i, s)| hit(&notes[i].slug, s)).collect();
    }
    let opts = SearchOptions::top(notes.len());
    let fused = if similar.is_empty() {
        lexical
    } else {
        sift_indexer::hybrid::fuse(ask.text, lexical, similar, None, &opts, &Fusion::default())
    };
    let by_slug: HashMap<&str, &Note> = notes.iter().map(|n| (n.slug.as_str(), n)).collect();
    let cites_asked =
        |note: &Note| note.front.citations.iter().any(|c| ask.paths.contains(&c.path));
    let mut answers: Vec<(usize, Answer<'n>)> = fused
        .into_iter()
        .enumerate()
        .filter_map(|(rank, h)| {
            let note = *by_slug.get(h.path.as_str())?;
            Some((rank, Answer { note, state: states.notes.get(&note.slug), score: h.score }))
        })
        .filter(|(_, a)| in_scope(a.note, ask.paths))
        .filter(|(_, a)| !(ask.fresh_only && a.is_stale()))
        .collect();
    // Notes citing the asked-about files answer even without a shared word.
    for note in notes {
        if cites_asked(note) && !answers.iter().any(|(_, a)| a.note.slug == note.slug) {
            let a = Answer { note, state: states.notes.get(&note.slug), score: 0.0 };
            if !(ask.fresh_only && a.is_stale()) && in_scope(note, ask.paths) {
                answers.push((usize::MAX, a));
            }
        }
    }
    answers.sort_by_key(|(rank, a)| (a.is_stale(), !cites_asked(a.note), *rank));
    answers.into_iter().take(ask.k).map(|(_, a)| a).collect()
}

/// Notes for a prompt: each with its title, state, citations and text, within `max_chars`.
pub fn for_prompt(answers: &[Answer<'_>], max_chars: usize) -> String {
    let mut out = String::new();
    for a in answers {
        let cites: Vec<String> = a.note.front.citations.iter().map(|c| c.label()).collect();
        let state = match a.state {
            Some(s) if !s.is_fresh() => format!(" [STALE: {}]", s.stale.as_deref().unwrap_or("")),
            _ => String::new(),
        };
        let entry = format!(
            "- {} ({}){state}{}\n  {}\n",
            a.note.front.title,
            a.note.slug,
            if cites.is_empty() { String::new() } else { format!(" cites {}", cites.join(", ")) },
            a.note.body.replace('\n', "\n  ")
        );
        if out.len() + entry.len() > max_chars {
            break;
        }
        out.push_str(&entry);
    }
    out
}
