//! What the commands share about embeddings: reading `[embed]`, loading the model (or saying
//! once why semantic search is off), and filling the vector index with progress.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Result;
use sift_engine::semantic::Semantic;
use sift_indexer::vectors::VectorIndex;
use sift_indexer::{CodeIndex, EmbedReport, Error};
use sift_runtime::embed::{self, EmbedConfig, LoadedModel, ModelError};

use super::progress::TerminalProgress;

/// `[embed]` of `root`'s configuration (files and environment).
pub fn embed_config(root: &Path) -> Result<EmbedConfig> {
    Ok(super::load_config(root, &[])?.embed()?)
}

/// Loads the configured model. When it cannot be used, `required` makes that an error;
/// otherwise a one-line notice goes to stderr (unless `quiet`) and the result is `None`:
/// lexical search goes on without it.
pub fn load_model(
    config: &EmbedConfig,
    required: bool,
    quiet: bool,
) -> Result<Option<LoadedModel>> {
    if !config.enabled {
        if required {
            anyhow::bail!(
                "embeddings are turned off (`[embed] enabled = false` in .sift/config.toml)"
            );
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
                eprintln!("note: semantic search is off: {why}");
            }
            Ok(None)
        }
    }
}

/// The model and vectors for a search: as configured, except that when the GPU is configured
/// and nothing but the query needs embedding, the model runs on the CPU. One short text costs a
/// few milliseconds there, while starting CUDA costs about a second (measured on an H200: a CLI
/// hybrid query took 1.1 s with the query embedded on CUDA); both give the same vectors.
pub fn search_model(
    index: &CodeIndex,
    config: &EmbedConfig,
    refresh: bool,
    required: bool,
) -> Result<Option<(LoadedModel, VectorIndex)>> {
    if config.device == embed::Device::Cuda && config.enabled {
        let cpu = EmbedConfig { device: embed::Device::Cpu, ..config.clone() };
        if let Ok(model) = embed::load(&cpu) {
            let vectors = vector_index(index, &model)?;
            let (with, total) = vectors.coverage();
            if !refresh || with == total {
                note_coverage(&vectors);
                return Ok(Some((model, vectors)));
            }
        }
    }
    let Some(model) = load_model(config, required, false)? else { return Ok(None) };
    let vectors = vectors(index, &model, config, refresh)?;
    Ok(Some((model, vectors)))
}

/// The embeddings a search of `index` uses, as the engine's [`Semantic`]: the model and the
/// vectors (embedding what is missing first when `refresh`), or why there are none. `required`
/// (semantic mode) makes a model that cannot be loaded an error.
pub fn for_search(
    index: &CodeIndex,
    root: &Path,
    refresh: bool,
    required: bool,
) -> Result<Semantic> {
    let config = embed_config(root)?;
    Ok(match search_model(index, &config, refresh, required)? {
        None => Semantic::off("no embedding model"),
        Some((_, vectors)) if vectors.is_empty() => Semantic::off(
            "no embeddings for this index yet: run `sift index` (or `sift search` without --no-refresh)",
        ),
        Some((model, vectors)) => Semantic::ready(model, vectors),
    })
}

/// Embeds the chunks of `index` that have no vector yet. Another process embedding for the
/// same model is not an error: its vectors will be there when it finishes.
pub fn embed_missing(
    index: &CodeIndex,
    model: &LoadedModel,
    config: &EmbedConfig,
    quiet: bool,
) -> Result<Option<(EmbedReport, f64)>> {
    let start = Instant::now();
    let progress = TerminalProgress::new(quiet);
    let batch = config.batch.unwrap_or(match model.info.kind {
        embed::ModelKind::Static => 256,
        embed::ModelKind::Transformer => 32,
    });
    let stop = AtomicBool::new(false);
    let result = index.embed_missing(model.embedder.as_ref(), batch, &progress, &stop);
    progress.finish();
    match result {
        Ok(report) => Ok(Some((report, start.elapsed().as_secs_f64()))),
        Err(Error::VectorsLocked { .. }) => {
            if !quiet {
                eprintln!(
                    "note: another sift process is computing embeddings here; using the vectors it has written so far"
                );
            }
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The vectors of the chunks `index` holds, after embedding what is missing when `refresh`; says
/// on stderr when only some chunks have one.
pub fn vectors(
    index: &CodeIndex,
    model: &LoadedModel,
    config: &EmbedConfig,
    refresh: bool,
) -> Result<VectorIndex> {
    let mut vectors = vector_index(index, model)?;
    let (with, total) = vectors.coverage();
    // Every chunk has its vector (the usual case): no embedding pass, whose writer lock and
    // second read of the vector file cost a hybrid search more than the search itself.
    if refresh && with < total {
        embed_missing(index, model, config, false)?;
        vectors = vector_index(index, model)?;
    }
    note_coverage(&vectors);
    Ok(vectors)
}

/// The vectors `index`'s chunks have for `model`, as they are.
fn vector_index(index: &CodeIndex, model: &LoadedModel) -> Result<VectorIndex> {
    let store = index.vector_store(model.embedder.as_ref())?;
    Ok(index.vector_index(&store)?)
}

/// Says on stderr when only some chunks have a vector.
fn note_coverage(vectors: &VectorIndex) {
    let (with, total) = vectors.coverage();
    if with > 0 && with < total {
        eprintln!(
            "note: {with} of {total} chunks ({:.0}%) have embeddings so far; semantic results come from those",
            with as f64 * 100.0 / total as f64
        );
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
        )
    }
}
