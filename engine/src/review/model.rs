//! The model reviewer's part of a review: which language model (the configured `[model]`, or
//! none), and the pass itself over the changed code files, with the code index as the source of
//! definitions and `.sift/REVIEW.md` as guidance.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use sift_indexer::{CodeIndex, Language, NoProgress, UpdateOptions};
use sift_runtime::llm::{Cancel, LanguageModel, config as llm_config};
use sift_runtime::rules::model::{
    ChangedSource, DefinitionSource, IndexDefinitions, ModelReview, ModelReviewConfig,
    NoDefinitions, review_with_model,
};
use sift_runtime::rules::suppression::short;
use sift_runtime::rules::{LineFilter, RulePack};

use super::error::{Error, Result};
use super::git::{self, Contents, read_source};
use super::settings;

/// Whether a review runs the model reviewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelChoice {
    /// When `[model]` is set in a configuration file or the environment.
    #[default]
    Auto,
    /// Always; a model that cannot be opened is an error.
    On,
    /// Never.
    Off,
}

/// The language model a review uses, or why it has none.
pub enum ReviewModel {
    /// The model reviewer was turned off.
    Off,
    /// No `[model]` is configured (and none was asked for): the review runs the rules alone.
    NotConfigured,
    /// The configured model, opened.
    Open(Box<dyn LanguageModel>),
}

impl std::fmt::Debug for ReviewModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReviewModel::Off => f.write_str("Off"),
            ReviewModel::NotConfigured => f.write_str("NotConfigured"),
            ReviewModel::Open(model) => f.debug_tuple("Open").field(&model.describe()).finish(),
        }
    }
}

/// The model the review of the repository at `root` uses: with [`ModelChoice::Auto`], the
/// configured `[model]` (user file, `root`'s `.sift/config.toml`, the environment read through
/// `env`) when any of its values is set. For a review with `base` (`--base REV`), the
/// repository's file is read as the merge-base of `REV` and `HEAD` holds it, like the review's
/// other settings (see [`settings`](super::settings)). A configured model that cannot be opened
/// is an error, not a silent skip.
pub fn model_for_review(
    root: &Path,
    choice: ModelChoice,
    base: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ReviewModel> {
    if choice == ModelChoice::Off {
        return Ok(ReviewModel::Off);
    }
    let config = configuration(root, base, env)?;
    let config = config.model().map_err(|e| Error::ModelConfig(e.to_string()))?;
    let configured =
        [&config.backend.source, &config.name.source, &config.path.source, &config.base_url.source]
            .iter()
            .any(|s| **s != llm_config::Source::Default);
    if !(choice == ModelChoice::On || configured) {
        return Ok(ReviewModel::NotConfigured);
    }
    let model = llm_config::open(&config).map_err(Error::Model)?;
    Ok(ReviewModel::Open(model))
}

/// The configuration a review of `root` runs with: the repository's file of the merge-base
/// with `base` in a `--base` review (a change cannot configure its own review), else its
/// working tree's; the user's file and `env` over it.
pub fn configuration(
    root: &Path,
    base: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::config::Config> {
    match base {
        Some(rev) => {
            let root = super::repository_root(root)?;
            let head = git::head(&root)?;
            let commit = git::merge_base(&root, rev, &head)?;
            let text = settings::file_at(&root, &commit, settings::MODEL_CONFIG)?;
            let name = PathBuf::from(format!("{}:{}", short(&commit), settings::MODEL_CONFIG));
            let inputs = crate::config::Inputs {
                repo_file: Some((name, text.as_deref())),
                ..crate::config::Inputs::new(Some(&root), env)
            };
            crate::config::Config::load(&inputs)
        }
        None => crate::config::Config::load(&crate::config::Inputs::new(Some(root), env)),
    }
    .map_err(|e| Error::ModelConfig(e.to_string()))
}

/// The model reviewer's part of a review: the model and how to run it.
pub struct ModelPass<'a> {
    /// The model.
    pub model: &'a dyn LanguageModel,
    /// Passes, hunk sizes, sampling.
    pub config: ModelReviewConfig,
}

impl std::fmt::Debug for ModelPass<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelPass")
            .field("model", &self.model.describe())
            .field("config", &self.config)
            .finish()
    }
}

/// Runs the model reviewer over the changed code files the rule pack's paths include, with
/// `guidance` (`.sift/REVIEW.md`) and definitions from the code index (refreshed first).
pub(crate) fn model_review(
    root: &Path,
    changes: &[(String, LineFilter)],
    contents: Contents<'_>,
    pack: &RulePack,
    guidance: Option<&str>,
    pass: &ModelPass<'_>,
) -> ModelReview {
    let index = crate::store::open(root)
        .and_then(|store| CodeIndex::open_or_create(&store))
        .ok()
        .map(|(index, _)| index)
        .filter(|index| index.update(&UpdateOptions::default(), &NoProgress).is_ok());
    let sources: Vec<(String, String, Vec<RangeInclusive<usize>>)> = changes
        .iter()
        .filter(|(path, _)| {
            Language::from_path(Path::new(path)).is_some() && pack.includes_path(path)
        })
        .filter_map(|(path, filter)| {
            read_source(root, path, contents).map(|s| (path.clone(), s, filter.ranges()))
        })
        .collect();
    let files: Vec<ChangedSource<'_>> =
        sources.iter().map(|(path, source, added)| ChangedSource { path, source, added }).collect();
    // The project's fresh notes about the changed files join the guidance. Notes the change
    // itself adds or edits do not: a pull request cannot brief the review of itself.
    let notes = index.as_ref().map(|index| memory_notes(root, index, changes)).unwrap_or_default();
    let guidance = match (guidance, notes.is_empty()) {
        (g, true) => g.map(str::to_string),
        (Some(g), false) => Some(format!("{g}\n\n{notes}")),
        (None, false) => Some(notes),
    };
    let guidance = guidance.as_deref();
    let definitions: Box<dyn DefinitionSource + '_> = match &index {
        Some(index) => Box::new(IndexDefinitions { index }),
        None => Box::new(NoDefinitions),
    };
    review_with_model(
        pass.model,
        &files,
        guidance,
        definitions.as_ref(),
        &pass.config,
        &Cancel::new(),
    )
}

/// The fresh memory notes about the changed paths, for the model reviewer's guidance (empty
/// when there are none). Notes among the changed files are left out.
fn memory_notes(root: &Path, index: &CodeIndex, changes: &[(String, LineFilter)]) -> String {
    use crate::memory::{self, find};
    let Ok(config) = crate::config::for_cli(root, &[]) else { return String::new() };
    let Ok(policy) = crate::config::policy(index.root(), &config) else {
        return String::new();
    };
    let Ok(store) = crate::store::open(root) else { return String::new() };
    let code = memory::IndexedCode::new(index, &policy);
    let mut book = memory::Notebook::load(memory::Memory::open(&store), &code);
    let prefix = format!("{}/{}/", sift_indexer::store::DIR, memory::NOTES_DIR.name);
    book.notes.retain(|n| {
        let file = format!("{prefix}{}.md", n.slug);
        !changes.iter().any(|(path, _)| *path == file)
    });
    let paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
    let text = paths.join(" ");
    let ask = find::Ask { text: &text, paths: &paths, k: 5, fresh_only: true };
    let answers = find::find(&book.notes, &book.states, &ask, None);
    if answers.is_empty() {
        return String::new();
    }
    format!(
        "Facts the project keeps in its memory notes about this code (checked against it):\n{}",
        find::for_prompt(&answers, 3000)
    )
}
