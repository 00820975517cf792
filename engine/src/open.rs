//! Opening a workspace for one command (`sift search`, `sift agent`, `sift eval`…): the index
//! brought up to date (or taken as it is), and the embeddings a search of it uses — the
//! upgrade's model and vectors once they cover the index, else the configured model's, loaded
//! for queries only when nothing else needs embedding. The language server and `sift mcp` keep
//! their workspaces open instead ([`crate::live`]), with the tier chosen by
//! [`Semantic::active`] as background passes fill the vectors.
//!
//! What a command tells its user on the way (a one-line notice, a progress bar) goes through
//! its [`Console`]: the engine words the notices, the front end shows them.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::Result;
use crate::embed::{self, EmbedConfig, LoadedModel, ModelError};
use crate::embeddings::{Semantic, UPGRADE_SCOPE, upgrade_serves};
use crate::index::{CodeIndex, EmbedReport, Error, OpenNotice, Progress, Scope, TextKind};
use crate::index::{UpdateOptions, VectorIndex, VectorStore};

/// Where a command's notices and progress go: stderr and a bar for the CLI.
pub trait Console {
    /// One line for the user, worded whole (`note: …`).
    fn note(&self, line: &str);
    /// A display of a long step's progress, hidden when `quiet`; finished when the step ends.
    fn progress(&self, quiet: bool) -> Box<dyn Bar>;
}

/// A progress display a [`Console`] hands out.
pub trait Bar: Progress {
    /// The step is over: the display goes away.
    fn finish(&self);
}

/// A console that shows nothing: for callers with no user to tell.
pub struct Silent;

impl Console for Silent {
    fn note(&self, _: &str) {}
    fn progress(&self, _: bool) -> Box<dyn Bar> {
        Box::new(Silent)
    }
}

impl Progress for Silent {
    fn phase(&self, _: &'static str, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
}

impl Bar for Silent {
    fn finish(&self) {}
}

/// Tells the user when opening the index had to rebuild it.
pub fn announce(notice: Option<&OpenNotice>, console: &dyn Console) {
    if let Some(OpenNotice::Rebuilt { old_format }) = notice {
        console.note(&format!(
            "note: the index had format {old_format}, older than this sift's ({}); rebuilding it",
            crate::index::FORMAT_VERSION
        ));
    }
}

/// The index of `root`: as it is with `no_refresh` (an error when there is none), else brought
/// up to date first, with the update options from `opts`, asked only when the tree is walked (a
/// command that has its configuration loaded already passes it on: it is read once per run).
/// When another process holds the writer, it searches what is committed and says so.
pub fn index(
    root: &Path,
    no_refresh: bool,
    opts: impl FnOnce() -> Result<UpdateOptions>,
    console: &dyn Console,
) -> Result<CodeIndex> {
    let store = crate::store::open(root)?;
    if no_refresh {
        return Ok(CodeIndex::open(&store)?.ok_or_else(|| Error::NoIndex {
            path: crate::index::Layout::new(&store).index_dir,
        })?);
    }
    // A running `sift lsp` or `sift index --watch` keeps the index fresh: no walk needed, and
    // no configuration to read for one (the watcher read its own).
    let layout = crate::index::Layout::new(&store);
    if layout.is_watched()
        && let Some(index) = CodeIndex::open(&store)?
    {
        tracing::debug!("the index is kept fresh by a watching sift process; not walking the tree");
        // Keeps a watcher that a search left behind alive.
        layout.note_use();
        return Ok(index);
    }
    let opts = opts()?;
    let (index, notice) = CodeIndex::open_or_create(&store)?;
    announce(notice.as_ref(), console);
    let progress = console.progress(false);
    // Without walking the tree when no directory changed (the index's freshness check).
    let result = index.refresh(&opts, progress.as_ref());
    progress.finish();
    match result {
        Ok(report) => {
            if notice.is_some() || report.added > 0 {
                console.note(&format!(
                    "indexed {} files ({} chunks) in {:.2} s",
                    report.files_total,
                    report.chunks_total,
                    report.elapsed_ms as f64 / 1000.0
                ));
            } else if report.changed_anything() {
                console.note(&format!(
                    "updated the index: {} changed, {} removed ({:.2} s)",
                    report.changed,
                    report.removed,
                    report.elapsed_ms as f64 / 1000.0
                ));
            }
        }
        Err(Error::Locked { .. }) => {
            console.note(
                "note: another sift process is updating the index; searching what it has committed so far",
            );
            index.reload()?;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(index)
}

/// `[embed]` of `root`'s configuration (files and environment).
pub fn embed_config(root: &Path) -> Result<EmbedConfig> {
    Ok(crate::config::for_cli(root, &[])?.embed()?)
}

/// Loads the configured model. When it cannot be used, `required` makes that an error;
/// otherwise a one-line notice goes to stderr (unless `quiet`) and the result is `None`:
/// lexical search goes on without it.
pub fn load_model(
    config: &EmbedConfig,
    required: bool,
    quiet: bool,
    console: &dyn Console,
) -> Result<Option<LoadedModel>> {
    if !config.enabled {
        if required {
            return Err(crate::Error::EmbeddingsOff);
        }
        return Ok(None);
    }
    match embed::load(config) {
        Ok(model) => Ok(Some(model)),
        Err(e) if required => Err(e.into()),
        Err(e) => {
            if !quiet {
                let why = match &e {
                    ModelError::NotInstalled { .. } | ModelError::NoRuntime { .. } => e.to_string(),
                    other => format!("{other}; lexical search still works"),
                };
                console.note(&format!("note: semantic search is off: {why}"));
            }
            Ok(None)
        }
    }
}

/// Loads the progressive upgrade's model (`[embed] upgrade`), for indexing or (`queries`)
/// for a search's query alone. One that is not installed is skipped silently (the default
/// names the transformer, which `sift model install` puts there beside the static model); one
/// that cannot load is a notice (unless `quiet`): the first model's vectors serve.
pub fn load_upgrade(
    config: &EmbedConfig,
    queries: bool,
    quiet: bool,
    console: &dyn Console,
) -> Option<LoadedModel> {
    let loaded = if queries { embed::load_for_queries(config) } else { embed::load(config) };
    match loaded {
        Ok(model) => Some(model),
        Err(ModelError::NotInstalled { .. }) => None,
        Err(e) => {
            if !quiet {
                console.note(&format!(
                    "note: the embedding upgrade ({}) is off: {e}; searches use the first model's vectors",
                    config.model_name()
                ));
            }
            None
        }
    }
}

/// Chunks a search embeds with the upgrade itself before using it (about a second of the
/// transformer on two cores): what a few edits since the last `sift index` leave. More, or an
/// upgrade not started, are left to `sift index` (or the language server).
const UPGRADE_CATCH_UP: u64 = 64;

/// The id and dimension of the vectors `config`'s model writes, from its `sift-model.toml`
/// alone (`None` when it is not installed).
fn vectors_key(config: &EmbedConfig) -> Option<(String, usize)> {
    let info = embed::configured_info(config).ok()?;
    Some((embed::vectors_id(&info), info.dim))
}

/// The vectors stored for `config`'s model, read without loading the model (`None` when it is
/// not installed).
fn stored_vectors(index: &CodeIndex, config: &EmbedConfig) -> Result<Option<VectorIndex>> {
    let Some((id, dim)) = vectors_key(config) else { return Ok(None) };
    let store = index.vector_store_of(&id, dim)?;
    Ok(Some(index.vector_index(&store)?))
}

/// The upgrade's model and vectors for a search, when its vectors cover every chunk (after
/// embedding the few that changed, when `refresh`). Its coverage is read before the model is
/// loaded: an upgrade not computed yet costs the search nothing but this notice (unless
/// `quiet`).
fn upgraded(
    index: &CodeIndex,
    config: &EmbedConfig,
    refresh: bool,
    quiet: bool,
    preload: &mut Option<Preload>,
    console: &dyn Console,
) -> Result<Option<(LoadedModel, VectorIndex)>> {
    let Some(up) = config.upgrade_config() else { return Ok(None) };
    let Some(vectors) = stored_vectors(index, &up)? else { return Ok(None) };
    let (with, total) = vectors.coverage();
    let missing = total - with;
    // Catching up is for an upgrade `sift index` computed before: a search never starts one.
    let catch_up = refresh && with > 0 && missing <= UPGRADE_CATCH_UP;
    if !upgrade_serves(with, total) && !catch_up {
        if total > 0 && !quiet {
            console.note(&format!(
                "note: semantic search uses {} until {} has vectors for every chunk ({with} of {total} so far; `sift index` computes the rest)",
                config.model_name(),
                up.model_name()
            ));
        }
        return Ok(None);
    }
    let preloaded = if missing == 0 { Preload::take(preload, &up) } else { None };
    let Some(model) = preloaded.or_else(|| load_upgrade(&up, missing == 0, quiet, console)) else {
        return Ok(None);
    };
    if missing == 0 {
        return Ok(Some((model, vectors)));
    }
    embed_missing(index, &model, &up, UPGRADE_SCOPE, true, console)?;
    let vectors = vector_index(index, &model)?;
    let (with, total) = vectors.coverage();
    Ok((with == total).then_some((model, vectors)))
}

/// The model and vectors for a search: the upgrade's when they cover the index, else the
/// configured model's. When nothing but the query needs embedding (every chunk has its vector,
/// or no refresh), the model is loaded for queries: on the CPU (one short text costs a few
/// milliseconds there, while starting CUDA costs about a second: measured on an H200, a CLI
/// hybrid query took 1.1 s with the query embedded on CUDA; both give the same vectors), and
/// without the graph optimisation that only pays off over many texts. A `preload` of the model
/// chosen is used instead of loading it again.
fn search_model(
    index: &CodeIndex,
    config: &EmbedConfig,
    refresh: bool,
    required: bool,
    preload: &mut Option<Preload>,
    console: &dyn Console,
) -> Result<Option<(LoadedModel, VectorIndex)>> {
    if let Some(found) = upgraded(index, config, refresh, false, preload, console)? {
        return Ok(Some(found));
    }
    if config.enabled
        && let Some(vectors) = stored_vectors(index, config)?
    {
        let (with, total) = vectors.coverage();
        if (!refresh || with == total)
            && let Some(model) =
                Preload::take(preload, config).or_else(|| embed::load_for_queries(config).ok())
        {
            note_coverage(&vectors, console);
            return Ok(Some((model, vectors)));
        }
    }
    let Some(model) = load_model(config, required, false, console)? else { return Ok(None) };
    let vectors = vectors(index, &model, config, refresh, console)?;
    Ok(Some((model, vectors)))
}

/// The embeddings a search of `index` uses, as the engine's [`Semantic`]: the model and the
/// vectors (embedding what is missing first when `refresh`), or why there are none. `required`
/// (semantic mode) makes a model that cannot be loaded an error. `preload`: see [`preload`]
/// (the configuration it read serves here too).
pub fn for_search(
    index: &CodeIndex,
    root: &Path,
    refresh: bool,
    required: bool,
    preload: Option<Preload>,
    console: &dyn Console,
) -> Result<Semantic> {
    let config = match &preload {
        Some(p) => p.config.clone(),
        None => embed_config(root)?,
    };
    for_search_with(index, config, refresh, required, preload, console)
}

/// [`for_search`] under `config` (`[embed]` of a configuration the command loaded already).
pub fn for_search_with(
    index: &CodeIndex,
    config: EmbedConfig,
    refresh: bool,
    required: bool,
    mut preload: Option<Preload>,
    console: &dyn Console,
) -> Result<Semantic> {
    Ok(match search_model(index, &config, refresh, required, &mut preload, console)? {
        None => Semantic::off("no embedding model"),
        Some((_, vectors)) if vectors.is_empty() => Semantic::off(
            "no embeddings for this index yet: run `sift index` (or `sift search` without --no-refresh)",
        ),
        Some((model, vectors)) => {
            let id = model.embedder.id().to_string();
            let semantic = Semantic::ready(model, vectors);
            // The query's embedding, when the preload computed it with this very model.
            if let Some((query, vector)) = preload.and_then(|p| p.query_vector(&id)) {
                semantic.remember_query(&query, vector);
            }
            semantic
        }
    })
}

/// What a preload's thread returns: the model and, when it worked, the query's embedding.
type Preloaded = (LoadedModel, Option<Vec<f32>>);

/// A search's model, loading on a thread of its own (and embedding the query once loaded) while
/// the index is opened and checked for changes: the two do not depend on each other. See
/// [`preload`].
pub struct Preload {
    /// `[embed]` of the repository, as read when the preload started.
    config: EmbedConfig,
    /// The model being loaded, as configured.
    model: String,
    query: String,
    /// The model and the query's embedding by it; until taken.
    thread: Option<std::thread::JoinHandle<Option<Preloaded>>>,
    /// The model's id and the query's embedding, once taken.
    vector: Option<(String, Vec<f32>)>,
}

/// Starts loading the model a search of `root` will most likely use, for `query`: the upgrade
/// (`[embed] upgrade`) when vectors of it are stored, else the configured model when vectors of
/// it are. Nothing is read but the configuration and the model's `sift-model.toml`; a guess
/// that turns out wrong (the upgrade's vectors do not cover the index after all) costs a model
/// load on the other core, and the search loads the right one itself.
pub fn preload(root: &Path, query: &str) -> Option<Preload> {
    let config = embed_config(root).ok()?;
    let store = crate::store::open(root).ok()?;
    let layout = crate::index::Layout::new(&store);
    let has_vectors = |c: &EmbedConfig| {
        vectors_key(c).is_some_and(|(id, _)| {
            let path = VectorStore::path_for(&layout, &id);
            std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
        })
    };
    let chosen = match config.upgrade_config() {
        Some(up) if has_vectors(&up) => up,
        _ if config.enabled && has_vectors(&config) => config.clone(),
        _ => return None,
    };
    let text = query.to_string();
    let model = chosen.model_name().to_string();
    let thread = std::thread::Builder::new()
        .name("sift-query-model".into())
        .spawn(move || {
            let model = embed::load_for_queries(&chosen).ok()?;
            let vector = model
                .embedder
                .embed(&[text.as_str()], TextKind::Query)
                .ok()
                .and_then(|mut v| v.pop());
            Some((model, vector))
        })
        .ok()?;
    Some(Preload { config, model, query: query.to_string(), thread: Some(thread), vector: None })
}

impl Preload {
    /// The preloaded model, when `preload` holds `config`'s and it loaded (waits for it).
    fn take(preload: &mut Option<Preload>, config: &EmbedConfig) -> Option<LoadedModel> {
        let p = preload.as_mut().filter(|p| p.model == config.model_name())?;
        let (model, vector) = p.thread.take()?.join().ok().flatten()?;
        p.vector = vector.map(|v| (model.embedder.id().to_string(), v));
        Some(model)
    }

    /// The query and its embedding, when the model whose id is `id` computed it.
    fn query_vector(self, id: &str) -> Option<(String, Vec<f32>)> {
        let (model, vector) = self.vector?;
        (model == id).then_some((self.query, vector))
    }
}

/// Embeds the chunks of `index` that have no vector yet. Another process embedding for the
/// same model is not an error: its vectors will be there when it finishes.
pub fn embed_missing(
    index: &CodeIndex,
    model: &LoadedModel,
    config: &EmbedConfig,
    scope: Scope,
    quiet: bool,
    console: &dyn Console,
) -> Result<Option<(EmbedReport, f64)>> {
    let start = Instant::now();
    let progress = console.progress(quiet);
    let batch = config.batch.unwrap_or_else(|| model.default_batch());
    let stop = AtomicBool::new(false);
    let result =
        index.embed_missing(model.embedder.as_ref(), scope, batch, progress.as_ref(), &stop);
    progress.finish();
    match result {
        Ok(report) => Ok(Some((report, start.elapsed().as_secs_f64()))),
        Err(Error::VectorsLocked { .. }) => {
            if !quiet {
                console.note(
                    "note: another sift process is computing embeddings here; using the vectors it has written so far",
                );
            }
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The vectors of the chunks `index` holds, after embedding what is missing when `refresh`; says
/// so when only some chunks have one.
pub fn vectors(
    index: &CodeIndex,
    model: &LoadedModel,
    config: &EmbedConfig,
    refresh: bool,
    console: &dyn Console,
) -> Result<VectorIndex> {
    let mut vectors = vector_index(index, model)?;
    let (with, total) = vectors.coverage();
    // Every chunk has its vector (the usual case): no embedding pass, whose writer lock and
    // second read of the vector file cost a hybrid search more than the search itself.
    if refresh && with < total {
        embed_missing(index, model, config, Scope::All, false, console)?;
        vectors = vector_index(index, model)?;
    }
    note_coverage(&vectors, console);
    Ok(vectors)
}

/// The vectors `index`'s chunks have for `model`, as they are.
fn vector_index(index: &CodeIndex, model: &LoadedModel) -> Result<VectorIndex> {
    let store = index.vector_store(model.embedder.as_ref())?;
    Ok(index.vector_index(&store)?)
}

/// Says when only some chunks have a vector.
fn note_coverage(vectors: &VectorIndex, console: &dyn Console) {
    let (with, total) = vectors.coverage();
    if with > 0 && with < total {
        console.note(&format!(
            "note: {with} of {total} chunks ({:.0}%) have embeddings so far; semantic results come from those",
            with as f64 * 100.0 / total as f64
        ));
    }
}

/// One line about an embedding run, for people.
pub fn describe_report(report: &EmbedReport, secs: f64, model: &LoadedModel) -> String {
    let on = match model.device {
        Some(device) => format!(" on {device}"),
        None => String::new(),
    };
    let pct = if report.chunks == 0 {
        100.0
    } else {
        report.with_vectors as f64 * 100.0 / report.chunks as f64
    };
    if report.embedded == 0 {
        format!("embeddings ({}) are up to date: {} chunks", report.model, report.with_vectors)
    } else {
        format!(
            "embedded {} chunks in {secs:.2} s with {}{on}; {:.0}% of {} chunks have vectors{}",
            report.embedded,
            report.model,
            pct,
            report.chunks,
            if report.interrupted { " (interrupted; the next run resumes)" } else { "" }
        ) + &match report.left_out {
            0 => String::new(),
            n => format!("; {n} chunks of translations left out"),
        }
    }
}
