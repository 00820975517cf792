//! A workspace's embeddings: the model, the vector cache, the search matrix, the query
//! embeddings asked before, and the passes that fill the cache.
//!
//! In the language server embedding never blocks anything: a pass runs on a blocking thread
//! after each index update, stops between batches as soon as another update is asked for (and
//! resumes after it, for free: the cache keeps what was done), and can be paused and resumed by
//! command. Searches use the latest matrix, whatever its coverage, and report that coverage.
//! The CLI builds its matrix once ([`Semantic::ready`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use sift_indexer::vectors::{VectorIndex, VectorStore};
use sift_indexer::{CodeIndex, EmbedReport, Error as IndexError, Progress, TextKind};
use sift_runtime::embed::{self, EmbedConfig, LoadedModel, ModelKind};

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
            store: Mutex::new(None),
            vectors: RwLock::new(vectors),
            queries: Mutex::new((HashMap::new(), VecDeque::new())),
            paused: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            embedded: AtomicU64::new(0),
            state: Mutex::new(state),
        }
    }

    /// Loads the model `config` names (blocking: reads model files); the matrix is built by
    /// the first [`Semantic::run_pass`].
    pub fn load(config: Result<EmbedConfig, String>) -> Semantic {
        let (model, unavailable, batch) = match config {
            Err(e) => (None, Some(e), 1),
            Ok(config) if !config.enabled => {
                (None, Some("turned off ([embed] enabled = false)".into()), 1)
            }
            Ok(config) => match embed::load(&config) {
                Ok(model) => {
                    let batch = config.batch.unwrap_or(match model.info.kind {
                        ModelKind::Static => 256,
                        ModelKind::Transformer => 32,
                    });
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
        let v = Arc::new(v);
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
        Ok(Some(v))
    }

    /// One embedding pass (blocking): embeds what the index holds without a vector, unless
    /// paused, then rebuilds the search matrix. Returns what it did, when it ran.
    pub fn run_pass(&self, index: &CodeIndex, progress: &dyn Progress) -> Option<EmbedReport> {
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
        if self.paused.load(Ordering::Relaxed) {
            self.set_state("paused");
        } else {
            self.set_state("embedding");
            match index.embed_missing_in(
                store,
                model.embedder.as_ref(),
                self.batch,
                progress,
                &self.stop,
            ) {
                Ok(r) => {
                    self.set_state(if r.interrupted {
                        if self.paused.load(Ordering::Relaxed) { "paused" } else { "pending" }
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
