//! A workspace's embeddings: the model, the vector cache, the search matrix, the query
//! embeddings asked before, and the passes that fill the cache.
//!
//! In the language server embedding never blocks anything: a pass runs on a blocking thread
//! after each index update, stops between batches as soon as another update is asked for (and
//! resumes after it, for free: the cache keeps what was done), and can be paused and resumed by
//! command. Searches use the latest matrix, whatever its coverage, and report that coverage.
//! The CLI builds its matrix once ([`Semantic::ready`]).
//!
//! Progressive upgrade (`[embed] upgrade`): after the configured model's pass, a better, slower
//! model (the transformer, by default) embeds the same chunks on a thread of low priority;
//! searches switch to its vectors once they cover every chunk ([`Semantic::active`]) and use
//! the first model's until then. Scores of two models are not comparable, so one search never
//! mixes them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use sift_indexer::vectors::{VectorIndex, VectorStore};
use sift_indexer::{CodeIndex, EmbedReport, Error as IndexError, Progress, Scope, TextKind};
use sift_runtime::embed::{self, EmbedConfig, LoadedModel};

/// What the progressive upgrade embeds: everything but what natural-language ranking leaves
/// aside (translation catalogs, lock files, minified, vendored and generated code: a slow
/// model's time goes to the code and its documentation).
pub const UPGRADE_SCOPE: Scope = Scope::NoAside;

/// Distinct queries whose embeddings are kept.
const QUERY_CACHE: usize = 256;

/// Query embeddings by query text, and the order they came in (oldest first, for eviction).
type QueryCache = (HashMap<String, Arc<Vec<f32>>>, VecDeque<String>);

/// Embeddings of one workspace.
pub struct Semantic {
    model: Option<Arc<LoadedModel>>,
    /// Why there is no model (shown in the coverage).
    unavailable: Option<String>,
    batch: usize,
    /// Which chunks this model embeds.
    scope: Scope,
    store: Mutex<Option<VectorStore>>,
    vectors: RwLock<Option<Arc<VectorIndex>>>,
    queries: Mutex<QueryCache>,
    /// Set by the pause command; cleared by resume.
    pub paused: AtomicBool,
    /// Asks a running embedding pass to stop after its current batch.
    pub stop: AtomicBool,
    /// Chunks with a vector, as of the latest matrix.
    pub embedded: AtomicU64,
    state: Mutex<&'static str>,
    /// The model whose vectors replace these once they cover every chunk.
    upgrade: Option<Upgrade>,
}

/// A progressive upgrade: loaded by its first pass, on that pass's thread.
struct Upgrade {
    config: EmbedConfig,
    tier: OnceLock<Box<Semantic>>,
}

/// Where a progressive upgrade stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeStatus {
    /// The model's name as configured.
    pub model: String,
    /// Chunks with its vector, as of its latest matrix.
    pub embedded: u64,
    /// Whether searches use it now (its vectors cover every chunk).
    pub in_use: bool,
    /// Its pass's state (as [`Semantic::state`]; `pending` before its first pass).
    pub state: &'static str,
    /// Why it cannot run, when it cannot.
    pub unavailable: Option<String>,
}

/// The one rule of the progressive upgrade: its vectors serve searches once they cover every
/// chunk of a non-empty index (`with` of `total`), never before. The servers apply it to the
/// vectors as their pass fills them ([`Semantic::active`]), a command to the stored ones
/// (`open.rs`).
pub fn upgrade_serves(with: u64, total: u64) -> bool {
    total > 0 && with == total
}

impl Semantic {
    /// No semantic search, and why (shown in coverage and in errors).
    pub fn off(why: impl Into<String>) -> Semantic {
        Semantic::with(None, Some(why.into()), 1, None)
    }

    /// A loaded model with the search matrix already built (the CLI's case).
    pub fn ready(model: LoadedModel, vectors: VectorIndex) -> Semantic {
        let embedded = vectors.coverage().0;
        let semantic = Semantic::with(Some(Arc::new(model)), None, 1, Some(Arc::new(vectors)));
        semantic.embedded.store(embedded, Ordering::Relaxed);
        semantic.set_state("ready");
        semantic
    }

    fn with(
        model: Option<Arc<LoadedModel>>,
        unavailable: Option<String>,
        batch: usize,
        vectors: Option<Arc<VectorIndex>>,
    ) -> Semantic {
        let state = if model.is_some() { "pending" } else { "off" };
        Semantic {
            model,
            unavailable,
            batch,
            scope: Scope::All,
            store: Mutex::new(None),
            vectors: RwLock::new(vectors),
            queries: Mutex::new((HashMap::new(), VecDeque::new())),
            paused: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            embedded: AtomicU64::new(0),
            state: Mutex::new(state),
            upgrade: None,
        }
    }

    /// Loads the model `config` names (blocking: reads model files); the matrix is built by
    /// the first [`Semantic::run_pass`]. A configured upgrade that is installed is loaded by the
    /// first [`Semantic::run_upgrade_pass`].
    pub fn load(config: Result<EmbedConfig, String>) -> Semantic {
        let upgrade = config.as_ref().ok().and_then(EmbedConfig::upgrade_config);
        let mut semantic = Semantic::load_one(config);
        if semantic.available()
            && let Some(config) = upgrade
        {
            match embed::configured_info(&config) {
                Ok(_) => semantic.upgrade = Some(Upgrade { config, tier: OnceLock::new() }),
                Err(e) => tracing::info!("no embedding upgrade: {e}"),
            }
        }
        semantic
    }

    fn load_one(config: Result<EmbedConfig, String>) -> Semantic {
        let (model, unavailable, batch) = match config {
            Err(e) => (None, Some(e), 1),
            Ok(config) if !config.enabled => {
                (None, Some("turned off ([embed] enabled = false)".into()), 1)
            }
            Ok(config) => match embed::load(&config) {
                Ok(model) => {
                    let batch = config.batch.unwrap_or_else(|| model.default_batch());
                    (Some(Arc::new(model)), None, batch)
                }
                Err(e) => {
                    tracing::warn!("semantic search is off: {e}");
                    (None, Some(e.to_string()), 1)
                }
            },
        };
        Semantic::with(model, unavailable, batch, None)
    }

    /// What searches use now: the upgrade once its vectors cover every chunk, else this.
    /// Take the model, the vectors and the query's embedding from the one tier this returns.
    pub fn active(&self) -> &Semantic {
        match self.upgrade.as_ref().and_then(|u| u.tier.get()) {
            Some(tier) if tier.covers_all() => tier,
            _ => self,
        }
    }

    /// Whether the latest matrix has a vector for every chunk (and there is one).
    fn covers_all(&self) -> bool {
        self.vectors().is_some_and(|v| {
            let (with, total) = v.coverage();
            upgrade_serves(with, total)
        })
    }

    /// The progressive upgrade's state, when one is configured and installed.
    pub fn upgrade(&self) -> Option<UpgradeStatus> {
        let upgrade = self.upgrade.as_ref()?;
        let model = upgrade.config.model_name().to_string();
        Some(match upgrade.tier.get() {
            None => UpgradeStatus {
                model,
                embedded: 0,
                in_use: false,
                state: "pending",
                unavailable: None,
            },
            Some(tier) => UpgradeStatus {
                model,
                embedded: tier.embedded.load(Ordering::Relaxed),
                in_use: tier.available() && tier.covers_all(),
                state: tier.state(),
                unavailable: tier.unavailable.clone(),
            },
        })
    }

    /// The loaded model, when there is one.
    pub fn model(&self) -> Option<&LoadedModel> {
        self.model.as_deref()
    }

    /// Whether a model is loaded.
    pub fn available(&self) -> bool {
        self.model.is_some()
    }

    /// `off`, `pending`, `embedding`, `ready`, `paused`, `waiting` or `failed`.
    pub fn state(&self) -> &'static str {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_state(&self, state: &'static str) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// Why semantic search is off, when it is.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// The model's id.
    pub fn model_id(&self) -> Option<&str> {
        self.model.as_ref().map(|m| m.embedder.id())
    }

    /// The latest search matrix.
    pub fn vectors(&self) -> Option<Arc<VectorIndex>> {
        self.vectors.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The embedding of a query, from the cache when it was asked before.
    pub fn query_vector(&self, query: &str) -> crate::Result<Option<Arc<Vec<f32>>>> {
        let Some(model) = &self.model else { return Ok(None) };
        if let Some(v) = self.queries.lock().unwrap_or_else(|e| e.into_inner()).0.get(query) {
            return Ok(Some(v.clone()));
        }
        let v = model
            .embedder
            .embed(&[query], TextKind::Query)
            .map_err(|e| crate::Error::QueryEmbedding(e.to_string()))?
            .pop()
            .unwrap_or_default();
        Ok(Some(self.remember_query(query, v)))
    }

    /// Keeps `vector` as the embedding of `query` by this model (one computed elsewhere, such
    /// as the CLI's, computed while the index was being opened).
    pub fn remember_query(&self, query: &str, vector: Vec<f32>) -> Arc<Vec<f32>> {
        let v = Arc::new(vector);
        let mut cache = self.queries.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *cache;
        if map.insert(query.to_string(), v.clone()).is_none() {
            order.push_back(query.to_string());
            while order.len() > QUERY_CACHE {
                if let Some(old) = order.pop_front() {
                    map.remove(&old);
                }
            }
        }
        v
    }

    /// One embedding pass (blocking): embeds what the index holds without a vector, unless
    /// paused, then rebuilds the search matrix. Returns what it did, when it ran.
    pub fn run_pass(&self, index: &CodeIndex, progress: &dyn Progress) -> Option<EmbedReport> {
        self.pass(index, progress, &self.stop, &self.paused)
    }

    /// The upgrade's pass (blocking), to run after [`Semantic::run_pass`]: on a thread of its
    /// own at low priority, where its model is loaded the first time, so that onnxruntime's
    /// worker threads, created by that load, inherit the priority: the editor, the index
    /// updates and the first model's passes come first. The same stop and pause as this
    /// model's. `None` when there is no upgrade, it cannot load, or it did not run.
    pub fn run_upgrade_pass(
        &self,
        index: &CodeIndex,
        progress: &(dyn Progress + Sync),
    ) -> Option<EmbedReport> {
        let upgrade = self.upgrade.as_ref()?;
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("sift-embed-upgrade".into())
                .spawn_scoped(scope, || {
                    sift_runtime::embed::lower_thread_priority();
                    let tier = upgrade.tier.get_or_init(|| {
                        let mut tier = Semantic::load_one(Ok(upgrade.config.clone()));
                        tier.scope = UPGRADE_SCOPE;
                        Box::new(tier)
                    });
                    tier.pass(index, progress, &self.stop, &self.paused)
                })
                .ok()?
                .join()
                .ok()
                .flatten()
        })
    }

    fn pass(
        &self,
        index: &CodeIndex,
        progress: &dyn Progress,
        stop: &AtomicBool,
        paused: &AtomicBool,
    ) -> Option<EmbedReport> {
        let model = self.model.as_ref()?;
        let mut guard = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            match index.vector_store(model.embedder.as_ref()) {
                Ok(store) => *guard = Some(store),
                Err(e) => {
                    tracing::error!("cannot open the vector cache: {e}");
                    self.set_state("failed");
                    return None;
                }
            }
        }
        let store = guard.as_mut()?;
        let mut report = None;
        if paused.load(Ordering::Relaxed) {
            self.set_state("paused");
        } else {
            self.set_state("embedding");
            let embedder = model.embedder.as_ref();
            match index.embed_missing_in(store, embedder, self.scope, self.batch, progress, stop) {
                Ok(r) => {
                    self.set_state(if r.interrupted {
                        if paused.load(Ordering::Relaxed) { "paused" } else { "pending" }
                    } else {
                        "ready"
                    });
                    report = Some(r);
                }
                Err(IndexError::VectorsLocked { .. }) => {
                    // Another sift embeds this repository: use what it has written so far.
                    self.set_state("waiting");
                    if let Err(e) = store.refresh() {
                        tracing::warn!("cannot read the vector cache: {e}");
                    }
                }
                Err(e) => {
                    tracing::error!("embedding failed: {e}");
                    self.set_state("failed");
                }
            }
        }
        match index.vector_index(store) {
            Ok(matrix) => {
                self.embedded.store(matrix.coverage().0, Ordering::Relaxed);
                *self.vectors.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(matrix));
            }
            Err(e) => tracing::error!("cannot build the vector index: {e}"),
        }
        report
    }
}
