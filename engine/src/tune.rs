//! A model of this repository, trained on this repository (`sift model tune`): the default
//! static model's token table fitted to the repository's own language, kept only when it beats
//! the base model on what it was not trained on.
//!
//! What it learns from:
//! - **the transformer as teacher**: each chunk's static vector is trained toward the
//!   transformer's vector of the same text (the upgrade pass's cached vectors; the pass is run
//!   first for chunks it has not embedded), and so are the docstrings and comment blocks found
//!   in the chunks (short texts, closer to what people search with), at a third of the weight;
//! - **the history**: each commit's subject (ticket references cleaned off) toward the mean of
//!   the teacher vectors of the files it changed, at a third of the weight.
//!
//! **The gate.** The newest fifth of the commits (by commit time, never a random split) and a
//! tenth of the docstrings (by a hash of their text) are held out: nothing of them is trained
//! on. A commit's subject must find the files it changed (Acc@5, files ranked by their best
//! chunk), a docstring its file. The tuned model is kept only when it beats the base model on
//! one held-out set and loses nowhere by more than 0.01; otherwise it is discarded and the
//! figures are shown. With fewer than 10 held-out queries in every set there is nothing to
//! judge by, and nothing is kept.
//!
//! **What is kept**: `.sift/models/tuned/` (a static model directory: `embeddings.bin`,
//! `tokenizer.json`, `sift-model.toml` with an id from the table's hash, `provenance.json`),
//! which `[embed] model` resolves to while it is unset (see `config::embed`), for every front
//! end; `sift model tune --reset` removes it. Its vectors have their own id in the vector cache:
//! indexing with it embeds the chunks again with the static model (seconds), the transformer's
//! vectors are untouched, and a reset or the same tune again re-embeds nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sift_indexer::CodeIndex;
use sift_indexer::embed::{Scope, TextKind};
use sift_indexer::update::Progress;
use sift_runtime::embed::tune::{Example, Table, TrainOptions, train};
use sift_runtime::embed::{self, EmbedConfig, ModelInfo, ModelKind};

/// The last tune's provenance, kept or not, under `.sift/`.
pub const LAST: &str = "models/last-tune.json";
/// Ids of tuned models start with this (the fusion's measured lexical weight is keyed on it).
pub const ID_PREFIX: &str = "repo-tuned-";

/// How [`tune`] tunes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Training passes (and the seed and learning rate, see [`TrainOptions`]).
    pub train: TrainOptions,
    /// The most commits read from the history, newest first.
    pub max_commits: usize,
    /// The fraction of commits held out, newest first.
    pub held_out: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { train: TrainOptions::default(), max_commits: 5000, held_out: 0.2 }
    }
}

/// One held-out set's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetFigures {
    /// The set.
    pub set: String,
    /// Its queries.
    pub queries: usize,
    /// Acc@5 of the base model (a query's top five files hold one of its files).
    pub base: f64,
    /// Acc@5 of the tuned model.
    pub tuned: f64,
    /// Acc@5 of the teacher (the transformer) on the same queries: what the static model is
    /// trained toward, for reference (not a gate).
    #[serde(default)]
    pub teacher: Option<f64>,
}

/// Where a tuned model came from, and how it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The tuned model's id (`repo-tuned-<hash>`).
    pub id: String,
    /// Whether the gate kept it.
    pub kept: bool,
    /// Why it was kept or discarded.
    pub verdict: String,
    /// When (RFC 3339 date).
    pub date: String,
    /// The base model's name and id.
    pub base: String,
    /// The base model's id.
    pub base_id: String,
    /// The teacher's name and vector id.
    pub teacher: String,
    /// Chunks trained on.
    pub chunks: usize,
    /// Docstrings and comments trained on, and held back.
    pub docs: (usize, usize),
    /// The commits trained on (newest first).
    pub trained_commits: Vec<String>,
    /// The commits held out (newest first).
    pub held_out_commits: Vec<String>,
    /// The newest trained commit's time and the oldest held-out one's (seconds since the Unix
    /// epoch): the date split.
    pub split: (Option<u64>, Option<u64>),
    /// Epochs, seed, learning rate.
    pub epochs: usize,
    /// The shuffle's seed.
    pub seed: u64,
    /// Mean cosine of the training texts to their targets before and after.
    pub fit: (f32, f32),
    /// The held-out figures.
    pub figures: Vec<SetFigures>,
    /// The lexical weight hybrid search gives the model (`sift_indexer::MODEL_LEXICAL_WEIGHTS`).
    pub lexical_weight: f32,
    /// Seconds the tune took.
    pub seconds: f64,
}

/// The tuned model's folder for the repository at `root`.
pub fn tuned_dir(root: &Path) -> PathBuf {
    crate::store::tuned_model_dir(root)
}

/// The tuned model in force, when there is one (its provenance).
pub fn current(root: &Path) -> Option<Provenance> {
    read(&tuned_dir(root).join("provenance.json"))
}

/// The last tune's provenance, kept or discarded.
pub fn last(root: &Path) -> Option<Provenance> {
    read(&root.join(".sift").join(LAST))
}

fn read(path: &Path) -> Option<Provenance> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Removes the tuned model: the base model serves again. `false` when there was none.
pub fn reset(root: &Path) -> Result<bool, String> {
    let dir = tuned_dir(root);
    if !dir.exists() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dir).map_err(|e| format!("remove {}: {e}", dir.display()))?;
    Ok(true)
}

/// A commit read from the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its id.
    pub sha: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: u64,
    /// Its subject, cleaned ([`clean_subject`]).
    pub subject: String,
    /// The indexed files it changed.
    pub files: Vec<String>,
}

/// A commit subject as a query: ticket and pull-request references and `Fixed #123 --` style
/// prefixes cut, so that what is left says what changed.
pub fn clean_subject(subject: &str) -> String {
    let mut s = subject.trim();
    for prefix in ["Fixed", "Fixes", "Fix", "Refs", "Closes", "Close"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            let rest = rest.trim_start();
            if rest.starts_with('#') {
                // `Fixed #1234 -- …`, `Refs #12, #13 -- …`
                let after = rest.trim_start_matches(|c: char| {
                    c == '#' || c.is_ascii_digit() || c == ',' || c == ' '
                });
                s = after.trim_start_matches(['-', ':', '—']).trim_start();
            }
        }
    }
    let words: Vec<&str> = s
        .split_whitespace()
        .filter(|w| {
            let w = w.trim_matches(|c: char| c == '(' || c == ')' || c == ',' || c == '.');
            !(w.starts_with('#') && w[1..].chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    words.join(" ")
}

/// The history at `root`, newest first: at most `max` commits (merges left out), each with
/// the files of `indexed` it changed; commits that changed none of them, or more than 20, or
/// whose subject has fewer than three words, are left out.
pub fn history(root: &Path, max: usize, indexed: &BTreeSet<String>) -> Vec<Commit> {
    let max = max.to_string();
    let args = ["log", "--no-merges", "-n", &max, "--format=%x1e%H%x1f%ct%x1f%s", "--name-only"];
    let Ok(out) = crate::review::git::git(root, &args) else { return Vec::new() };
    let text = String::from_utf8_lossy(&out);
    let mut commits = Vec::new();
    for record in text.split('\u{1e}').filter(|r| !r.trim().is_empty()) {
        let mut lines = record.lines();
        let Some(head) = lines.next() else { continue };
        let mut parts = head.split('\u{1f}');
        let (Some(sha), Some(time), Some(subject)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let files: Vec<String> =
            lines.map(str::trim).filter(|l| indexed.contains(*l)).map(str::to_owned).collect();
        let subject = clean_subject(subject);
        if files.is_empty() || files.len() > 20 || subject.split_whitespace().count() < 3 {
            continue;
        }
        commits.push(Commit {
            sha: sha.to_owned(),
            time: time.parse().unwrap_or(0),
            subject,
            files,
        });
    }
    commits.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.sha.cmp(&b.sha)));
    commits
}

/// Splits `commits` (newest first) by date: the newest `fraction` held out, the rest to train
/// on. Commits at the same second as the cut go to the held-out side, so that every trained
/// commit is older than every held-out one.
pub fn split_by_date(commits: &[Commit], fraction: f64) -> (Vec<Commit>, Vec<Commit>) {
    let n = ((commits.len() as f64) * fraction).ceil() as usize;
    let Some(cut) = commits.get(n.saturating_sub(1)).map(|c| c.time).filter(|_| n > 0) else {
        return (commits.to_vec(), Vec::new());
    };
    let (held, trained): (Vec<Commit>, Vec<Commit>) =
        commits.iter().cloned().partition(|c| c.time >= cut);
    (trained, held)
}

/// Docstrings and comment blocks of a chunk's text: each of at least five words, at most 600
/// characters.
pub fn doc_texts(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut keep = |text: String| {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.split_whitespace().count() >= 5 && text.len() <= 600 {
            out.push(text);
        }
    };
    for quote in ["\"\"\"", "'''"] {
        let mut rest = content;
        while let Some(start) = rest.find(quote) {
            let after = &rest[start + 3..];
            let Some(end) = after.find(quote) else { break };
            keep(after[..end].to_owned());
            rest = &after[end + 3..];
        }
    }
    let mut block = String::new();
    for line in content.lines() {
        let t = line.trim_start();
        let comment = ["///", "//!", "//", "#", "--", "*"]
            .iter()
            .find_map(|p| t.strip_prefix(p))
            .filter(|_| !t.starts_with("#[") && !t.starts_with("#!") && !t.starts_with("#include"));
        match comment {
            Some(text) => {
                block.push(' ');
                block.push_str(text.trim_start_matches(['/', '!', '*']).trim());
            }
            None if !block.is_empty() => keep(std::mem::take(&mut block)),
            None => {}
        }
    }
    if !block.is_empty() {
        keep(block);
    }
    out
}

/// One query of a gate set: its text (for the teacher), its tokens (for the static tables,
/// which share the tokenizer) and the files that answer it.
struct Query {
    text: String,
    tokens: Vec<(u32, f32)>,
    gold: BTreeSet<usize>,
}

/// Acc@5 of `queries` (their vectors `query_vectors`) over chunks `vectors` (unit, one per
/// chunk) of files `files` (a file index per chunk), files ranked by their best chunk.
fn accuracy(
    query_vectors: &[Vec<f32>],
    vectors: &[Vec<f32>],
    files: &[usize],
    queries: &[Query],
) -> f64 {
    if queries.is_empty() {
        return 0.0;
    }
    let mut hits = 0;
    for (q, qv) in queries.iter().zip(query_vectors) {
        let mut best: HashMap<usize, f32> = HashMap::new();
        for (v, &f) in vectors.iter().zip(files) {
            let s: f32 = v.iter().zip(qv.iter()).map(|(a, b)| a * b).sum();
            let e = best.entry(f).or_insert(f32::MIN);
            if s > *e {
                *e = s;
            }
        }
        let mut ranked: Vec<(usize, f32)> = best.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        if ranked.iter().take(5).any(|(f, _)| q.gold.contains(f)) {
            hits += 1;
        }
    }
    hits as f64 / queries.len() as f64
}

/// What [`tune`] made.
#[derive(Debug, Clone)]
pub struct Tuned {
    /// Its provenance (also written beside it, and as the last tune's).
    pub provenance: Provenance,
    /// Where it is, when kept.
    pub dir: Option<PathBuf>,
}

/// Tunes the static model `embed` names on the repository at `root` whose index is `index`
/// (see the module doc). `say` reports each phase; `progress` counts the teacher's pass.
pub fn tune(
    root: &Path,
    index: &CodeIndex,
    embed: &EmbedConfig,
    options: &Options,
    progress: &dyn Progress,
    say: &dyn Fn(&str),
) -> Result<Tuned, String> {
    let started = std::time::Instant::now();
    let base_name = embed.model_name().to_owned();
    let base_dir = embed::model_dir(&base_name);
    let base_info = embed::model_info(&base_dir, &base_name).map_err(|e| e.to_string())?;
    if base_info.kind != ModelKind::Static {
        return Err(format!(
            "sift model tune trains a static model, and [embed] model is {base_name}, a transformer"
        ));
    }
    let teacher_config = embed.upgrade_config().ok_or(
        "sift model tune learns from the transformer ([embed] upgrade), which is turned off",
    )?;
    let teacher = embed::load(&teacher_config).map_err(|e| {
        format!("the teacher {} cannot be loaded: {e}", teacher_config.model_name())
    })?;

    // The teacher's vector of every chunk: its cache, filled first where it has none.
    say("the transformer's vectors of the chunks (cached by the upgrade pass; missing ones now)");
    let stop = std::sync::atomic::AtomicBool::new(false);
    match index.embed_missing(
        teacher.embedder.as_ref(),
        Scope::NoAside,
        teacher.default_batch(),
        progress,
        &stop,
    ) {
        Ok(_) => {}
        // The language server (or another sift) is embedding this repository: learn from what
        // it has cached so far.
        Err(sift_indexer::Error::VectorsLocked { .. }) => say(
            "another sift is embedding this repository: using the transformer's vectors cached so far",
        ),
        Err(e) => return Err(format!("the teacher's pass: {e}")),
    }
    let store = index
        .vector_store_of(teacher.embedder.id(), teacher.embedder.dim())
        .map_err(|e| e.to_string())?;
    let chunks = index.embedding_texts(Scope::NoAside).map_err(|e| e.to_string())?;
    let unit = |v: &[i8]| {
        let mut f: Vec<f32> = v.iter().map(|&x| f32::from(x)).collect();
        let n = f.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            f.iter_mut().for_each(|x| *x /= n);
        }
        f
    };
    // The chunks the teacher has a vector of: each with its file and that vector.
    let mut file_ids: BTreeMap<String, usize> = BTreeMap::new();
    let mut texts = Vec::new();
    let mut files: Vec<usize> = Vec::new();
    let mut targets: Vec<Vec<f32>> = Vec::new();
    for c in &chunks {
        let Some(v) = store.get(c.key) else { continue };
        let next = file_ids.len();
        files.push(*file_ids.entry(c.path.clone()).or_insert(next));
        texts.push(c);
        targets.push(unit(v));
    }
    if texts.is_empty() {
        return Err("the index has no chunk with the transformer's vector: nothing to learn from (sift index first)".into());
    }
    let base = Table::load(&base_dir).map_err(|e| e.to_string())?;
    let mut tuned = base.clone();
    // Each chunk tokenized once: for training, and for ranking by both tables at the gate.
    let chunk_tokens: Vec<Vec<(u32, f32)>> = texts.iter().map(|c| base.tokens(&c.text)).collect();
    let mut examples: Vec<Example> = chunk_tokens
        .iter()
        .zip(&targets)
        .map(|(t, y)| Example { tokens: t.clone(), target: y.clone(), weight: 1.0 })
        .collect();
    let teach = |group: &[&str]| {
        teacher.embedder.embed(group, TextKind::Query).map_err(|e| format!("the teacher: {e}"))
    };

    // Docstrings and comments: a tenth held back (by a hash of the text) for the gate.
    let mut docs: BTreeMap<String, usize> = BTreeMap::new();
    for (c, file) in texts.iter().zip(&files) {
        for d in doc_texts(&c.content) {
            docs.entry(d).or_insert(*file);
        }
    }
    let held_back = |t: &str| blake3::hash(t.as_bytes()).as_bytes()[0] < 26;
    let (doc_gate, doc_train): (Vec<_>, Vec<_>) =
        docs.into_iter().take(20_000).partition(|(t, _)| held_back(t));
    say(&format!("the transformer's vectors of {} docstrings and comments", doc_train.len()));
    let doc_texts_: Vec<&str> = doc_train.iter().map(|(t, _)| t.as_str()).collect();
    for group in doc_texts_.chunks(64) {
        for (t, v) in group.iter().zip(teach(group)?) {
            examples.push(Example { tokens: base.tokens(t), target: v, weight: 0.3 });
        }
    }

    // The history: trained on the older commits, gated on the newest.
    let indexed: BTreeSet<String> = file_ids.keys().cloned().collect();
    let commits = history(root, options.max_commits, &indexed);
    let (trained_commits, held_commits) = split_by_date(&commits, options.held_out);
    let mut by_file: HashMap<usize, Vec<&Vec<f32>>> = HashMap::new();
    for (file, y) in files.iter().zip(&targets) {
        by_file.entry(*file).or_default().push(y);
    }
    let dim = base.dim;
    for c in &trained_commits {
        let mut target = vec![0f32; dim];
        for f in c.files.iter().filter_map(|f| file_ids.get(f)) {
            for y in by_file.get(f).into_iter().flatten() {
                target.iter_mut().zip(y.iter()).for_each(|(t, x)| *t += x);
            }
        }
        let n = target.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n == 0.0 {
            continue;
        }
        target.iter_mut().for_each(|x| *x /= n);
        examples.push(Example { tokens: base.tokens(&c.subject), target, weight: 0.3 });
    }
    examples.retain(|e| !e.tokens.is_empty());

    say(&format!(
        "training on {} chunks, {} docstrings and comments, {} commits ({} held out)",
        texts.len(),
        doc_train.len(),
        trained_commits.len(),
        held_commits.len()
    ));
    let epochs = options.train.epochs.max(1);
    let report = |done: usize, total: usize| {
        let per_epoch = total.div_ceil(epochs).max(1);
        if done.is_multiple_of(per_epoch) || done == total {
            say(&format!("  epoch {}/{epochs}", done.div_ceil(per_epoch)));
        }
    };
    let fit = train(&mut tuned, &examples, &options.train, &report);

    // The gate.
    say("the held-out sets: base model against tuned");
    let query = |text: &str, gold: BTreeSet<usize>| Query {
        text: text.to_owned(),
        tokens: base.tokens(text),
        gold,
    };
    let commit_queries: Vec<Query> = held_commits
        .iter()
        .map(|c| {
            query(&c.subject, c.files.iter().filter_map(|f| file_ids.get(f).copied()).collect())
        })
        .collect();
    let doc_queries: Vec<Query> =
        doc_gate.iter().map(|(t, f)| query(t, BTreeSet::from([*f]))).collect();
    let base_vectors: Vec<Vec<f32>> = chunk_tokens.iter().map(|t| base.embed_tokens(t)).collect();
    let tuned_vectors: Vec<Vec<f32>> = chunk_tokens.iter().map(|t| tuned.embed_tokens(t)).collect();
    let mut figures = Vec::new();
    for (set, queries) in
        [("newest commits → files", &commit_queries), ("docstrings → files", &doc_queries)]
    {
        if queries.is_empty() {
            continue;
        }
        let with = |t: &Table| -> Vec<Vec<f32>> {
            queries.iter().map(|q| t.embed_tokens(&q.tokens)).collect()
        };
        let texts_: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
        // The teacher's figure is a reference: a failure leaves it out, not the gate.
        let teacher_queries: Option<Vec<Vec<f32>>> = texts_
            .chunks(64)
            .map(|g| teach(g).ok())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect());
        figures.push(SetFigures {
            set: set.into(),
            queries: queries.len(),
            base: accuracy(&with(&base), &base_vectors, &files, queries),
            tuned: accuracy(&with(&tuned), &tuned_vectors, &files, queries),
            teacher: teacher_queries.map(|q| accuracy(&q, &targets, &files, queries)),
        });
    }
    let judged: Vec<&SetFigures> = figures.iter().filter(|f| f.queries >= 10).collect();
    let worse = judged.iter().find(|f| f.tuned < f.base - 0.01);
    let better = judged.iter().any(|f| f.tuned > f.base);
    let (kept, verdict) = match (judged.is_empty(), worse, better) {
        (true, _, _) => (
            false,
            "too little held out to judge by (fewer than 10 queries in every set)".to_owned(),
        ),
        (false, Some(w), _) => (
            false,
            format!(
                "worse than the base model on {} ({:.3} against {:.3})",
                w.set, w.tuned, w.base
            ),
        ),
        (false, None, false) => {
            (false, "no better than the base model on any held-out set".to_owned())
        }
        (false, None, true) => {
            (true, "better on a held-out set, nowhere worse by more than 0.01".to_owned())
        }
    };

    let dir = tuned_dir(root);
    let staging = root.join(".sift").join("models").join("tuned.new");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| format!("create {}: {e}", staging.display()))?;
    tuned.write(&staging).map_err(|e| e.to_string())?;
    let bytes = std::fs::read(staging.join("embeddings.bin")).map_err(|e| e.to_string())?;
    let id = format!("{ID_PREFIX}{}", &blake3::hash(&bytes).to_hex()[..16]);
    let provenance = Provenance {
        id: id.clone(),
        kept,
        verdict,
        date: crate::memory::today(),
        base: base_name.clone(),
        base_id: base_info.id.clone(),
        teacher: format!("{} ({})", teacher_config.model_name(), teacher.embedder.id()),
        chunks: texts.len(),
        docs: (doc_train.len(), doc_gate.len()),
        trained_commits: trained_commits.iter().map(|c| c.sha.clone()).collect(),
        held_out_commits: held_commits.iter().map(|c| c.sha.clone()).collect(),
        split: (trained_commits.first().map(|c| c.time), held_commits.last().map(|c| c.time)),
        epochs: options.train.epochs,
        seed: options.train.seed,
        fit: (fit.cosine_before, fit.cosine_after),
        figures,
        lexical_weight: lexical_weight(&id),
        seconds: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_string_pretty(&provenance).map_err(|e| e.to_string())?;
    let last = root.join(".sift").join(LAST);
    std::fs::write(&last, &json).map_err(|e| format!("write {}: {e}", last.display()))?;
    if !kept {
        let _ = std::fs::remove_dir_all(&staging);
        return Ok(Tuned { provenance, dir: None });
    }
    let info = ModelInfo {
        id,
        kind: ModelKind::Static,
        dim: base_info.dim,
        max_tokens: base_info.max_tokens,
        source: format!(
            "sift model tune of {base_name} on this repository with {} as teacher ({})",
            teacher_config.model_name(),
            provenance.date
        ),
    };
    let toml = toml::to_string(&info).map_err(|e| e.to_string())?;
    let write = |name: &str, text: &str| {
        std::fs::write(staging.join(name), text).map_err(|e| format!("write {name}: {e}"))
    };
    write("sift-model.toml", &toml)?;
    write("provenance.json", &json)?;
    std::fs::copy(base_dir.join("tokenizer.json"), staging.join("tokenizer.json"))
        .map_err(|e| format!("copy the tokenizer: {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&staging, &dir).map_err(|e| format!("move the model into place: {e}"))?;
    Ok(Tuned { provenance, dir: Some(dir) })
}

/// The lexical weight hybrid search gives the model `id`.
pub fn lexical_weight(id: &str) -> f32 {
    sift_indexer::MODEL_LEXICAL_WEIGHTS
        .iter()
        .find(|(p, _)| id.starts_with(p))
        .map_or(0.5, |(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_lose_their_ticket_references() {
        assert_eq!(
            clean_subject("Fixed #35417 -- Made the cache middleware skip private responses."),
            "Made the cache middleware skip private responses."
        );
        assert_eq!(clean_subject("Refs #12, #13 -- Cleaned up tests"), "Cleaned up tests");
        assert_eq!(clean_subject("Add retry to the client (#412)"), "Add retry to the client");
    }

    #[test]
    fn the_split_is_by_date_and_no_trained_commit_is_newer_than_a_held_out_one() {
        let c = |sha: &str, time| Commit {
            sha: sha.into(),
            time,
            subject: "s s s".into(),
            files: vec!["a".into()],
        };
        // Newest first, two at the cut's second.
        let commits = vec![c("e", 50), c("d", 40), c("c", 40), c("b", 20), c("a", 10)];
        let (trained, held) = split_by_date(&commits, 0.4);
        let held: Vec<&str> = held.iter().map(|c| c.sha.as_str()).collect();
        let trained: Vec<&str> = trained.iter().map(|c| c.sha.as_str()).collect();
        assert_eq!(held, ["e", "d", "c"], "the cut's second goes to the held-out side");
        assert_eq!(trained, ["b", "a"]);
        let (all, none) = split_by_date(&commits, 0.0);
        assert_eq!((all.len(), none.len()), (5, 0));
    }

    #[test]
    fn docstrings_and_comment_blocks_are_found() {
        let text = "def f():\n    \"\"\"Return the number of open sessions for a user.\"\"\"\n    # count the rows that are still marked as live\n    # in the sessions table\n    return 1\n#[derive(Debug)]\n";
        assert_eq!(
            doc_texts(text),
            [
                "Return the number of open sessions for a user.",
                "count the rows that are still marked as live in the sessions table",
            ]
        );
    }
}
