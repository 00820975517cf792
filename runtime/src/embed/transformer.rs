//! A transformer sentence-embedding model (BERT-style encoder such as all-MiniLM-L6-v2) run by
//! onnxruntime through `ort`: tokenised with the model's own `tokenizer.json`, mean-pooled over
//! the real tokens (never the padding), L2-normalised.

use std::path::Path;
use std::sync::Mutex;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use sift_indexer::embed::{EmbedError, Embedder, TextKind};
use tokenizers::{Tokenizer, TruncationParams};

use super::{Device, ModelError, ModelInfo, Workload, ort_env};

/// A transformer embedding model in an onnxruntime session.
pub struct TransformerEmbedder {
    id: String,
    dim: usize,
    tokenizer: Tokenizer,
    session: Mutex<Graph>,
    /// Whether the graph takes `token_type_ids`.
    wants_type_ids: bool,
    output: String,
    /// What actually runs the model (`cpu` after a CUDA fallback).
    pub device: Device,
    file: std::path::PathBuf,
}

impl TransformerEmbedder {
    /// Loads `dir` (`model.onnx`, `tokenizer.json`, `sift-model.toml`) on `device`, with
    /// `threads` intra-op threads (0: onnxruntime's choice), for `workload`.
    pub fn load(
        dir: &Path,
        info: &ModelInfo,
        device: Device,
        threads: usize,
        workload: Workload,
    ) -> Result<TransformerEmbedder, ModelError> {
        let onnx = dir.join("model.onnx");
        // The tokenizer (~17 ms to parse) loads beside onnxruntime and the graph.
        let (tokenizer, graph) = std::thread::scope(|scope| {
            let tokenizer =
                scope.spawn(|| load_tokenizer(&dir.join("tokenizer.json"), Some(info.max_tokens)));
            let graph = graph(dir, &onnx, device, threads, workload);
            let tokenizer = tokenizer.join().unwrap_or_else(|_| {
                Err(ModelError::Load {
                    path: dir.join("tokenizer.json"),
                    reason: "the tokenizer's loader panicked".into(),
                })
            });
            (tokenizer, graph)
        });
        let (tokenizer, (session, device, file)) = (tokenizer?, graph?);
        Self::assemble(info, tokenizer, session, device, file)
    }

    fn assemble(
        info: &ModelInfo,
        tokenizer: Tokenizer,
        session: Graph,
        device: Device,
        file: std::path::PathBuf,
    ) -> Result<TransformerEmbedder, ModelError> {
        let wants_type_ids = session.inputs().iter().any(|i| i.name() == "token_type_ids");
        let output = session
            .outputs()
            .iter()
            .find(|o| o.name() == "last_hidden_state")
            .or_else(|| session.outputs().first())
            .map(|o| o.name().to_string())
            .ok_or_else(|| ModelError::Load {
                path: file.clone(),
                reason: "the graph has no outputs".into(),
            })?;
        Ok(TransformerEmbedder {
            id: super::vectors_id(info),
            dim: info.dim,
            tokenizer,
            session: Mutex::new(session),
            wants_type_ids,
            output,
            device,
            file,
        })
    }

    /// The file the graph was loaded from: `model.onnx`, or [`QUERY_FORM`] for queries.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Runs the encoder on already tokenised sequences and mean-pools each over its tokens.
    /// Every sequence must hold at least one token. Used for embedding texts and for distilling
    /// a static model from single tokens.
    pub fn embed_ids(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        let batch = seqs.len();
        let len = seqs.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let mut ids = vec![0i64; batch * len];
        let mut mask = vec![0i64; batch * len];
        for (b, seq) in seqs.iter().enumerate() {
            for (t, &id) in seq.iter().enumerate() {
                ids[b * len + t] = i64::from(id);
                mask[b * len + t] = 1;
            }
        }
        let shape = [batch as i64, len as i64];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| EmbedError(format!("input tensor: {e}")))
        };
        let mut inputs: Vec<(std::borrow::Cow<'_, str>, SessionInputValue<'_>)> = vec![
            ("input_ids".into(), tensor(ids)?.into()),
            ("attention_mask".into(), tensor(mask.clone())?.into()),
        ];
        if self.wants_type_ids {
            inputs.push(("token_type_ids".into(), tensor(vec![0i64; batch * len])?.into()));
        }
        let mut session = self.session.lock().map_err(|_| EmbedError("model poisoned".into()))?;
        let outputs = session.run(inputs).map_err(|e| EmbedError(format!("onnxruntime: {e}")))?;
        let (shape, data) = outputs[self.output.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(|e| EmbedError(format!("model output: {e}")))?;
        let dims: Vec<i64> = shape.iter().copied().collect();
        if dims.len() != 3 || dims[0] as usize != batch || dims[2] as usize != self.dim {
            return Err(EmbedError(format!(
                "model output has shape {dims:?}; [{batch}, {len}, {}] expected",
                self.dim
            )));
        }
        let seq_len = dims[1] as usize;
        let mut out = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut v = vec![0f32; self.dim];
            let mut n = 0f32;
            for t in 0..seq_len.min(len) {
                if mask[b * len + t] == 0 {
                    continue;
                }
                let row = &data[(b * seq_len + t) * self.dim..(b * seq_len + t + 1) * self.dim];
                for (acc, x) in v.iter_mut().zip(row) {
                    *acc += x;
                }
                n += 1.0;
            }
            if n > 0.0 {
                v.iter_mut().for_each(|x| *x /= n);
            }
            normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }

    /// The tokenizer (with this model's truncation).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
}

impl Embedder for TransformerEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str], _kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut seqs = Vec::with_capacity(texts.len());
        for text in texts {
            let enc = self
                .tokenizer
                .encode(*text, true)
                .map_err(|e| EmbedError(format!("tokenizer: {e}")))?;
            seqs.push(enc.get_ids().to_vec());
        }
        self.embed_ids(&seqs)
    }
}

/// L2-normalises `v` in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 && n.is_finite() {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Loads a `tokenizer.json` with padding off (pooling must only see real tokens) and, when
/// given, truncation to `max_tokens` (special tokens included).
pub fn load_tokenizer(path: &Path, max_tokens: Option<usize>) -> Result<Tokenizer, ModelError> {
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| ModelError::Load { path: path.to_path_buf(), reason: e.to_string() })?;
    tokenizer.with_padding(None);
    let trunc = max_tokens.map(|max_length| TruncationParams { max_length, ..Default::default() });
    tokenizer
        .with_truncation(trunc)
        .map_err(|e| ModelError::Load { path: path.to_path_buf(), reason: e.to_string() })?;
    Ok(tokenizer)
}

/// The graph a [`TransformerEmbedder`] runs: loaded from `model.onnx` by onnxruntime, or the
/// query form mapped from its file (onnxruntime reads the ORT format's weights where they lie).
enum Graph {
    Loaded(Session),
    Mapped {
        // Declared first: dropped before the mapping it reads.
        session: ort::session::InMemorySession<'static>,
        _file: memmap2::Mmap,
    },
}

impl Graph {
    fn session(&self) -> &Session {
        match self {
            Graph::Loaded(s) => s,
            Graph::Mapped { session, .. } => session,
        }
    }

    fn run<'i, 'v: 'i, const N: usize>(
        &mut self,
        inputs: impl Into<ort::session::SessionInputs<'i, 'v, N>>,
    ) -> ort::Result<ort::session::SessionOutputs<'_>> {
        match self {
            Graph::Loaded(s) => s.run(inputs),
            Graph::Mapped { session, .. } => session.run(inputs),
        }
    }

    fn inputs(&self) -> &[ort::value::Outlet] {
        self.session().inputs()
    }

    fn outputs(&self) -> &[ort::value::Outlet] {
        self.session().outputs()
    }
}

/// The query form of a model directory's transformer: its graph with the embedding table
/// gathered before it is dequantised (see `onnx_graph`), in onnxruntime's own format, which
/// loads without parsing protobuf or copying the weights. Written by `sift model install`
/// (checked to embed exactly as `model.onnx`); used by [`Workload::Queries`] on the CPU. On
/// two cores, all-MiniLM-L6-v2's graph loads and embeds a query in about half the time of
/// `model.onnx` (runtime/examples/query_model.rs measures both).
pub const QUERY_FORM: &str = "query.ort";

/// Loads the graph for `workload`: the query form ([`current_query_form`]) for queries on the
/// CPU, falling back to `onnx` when it does not load (an onnxruntime that is not the one that
/// wrote it); else `onnx`. Returns the graph, the device that runs it and its file.
fn graph(
    dir: &Path,
    onnx: &Path,
    device: Device,
    threads: usize,
    workload: Workload,
) -> Result<(Graph, Device, std::path::PathBuf), ModelError> {
    let env = ort_env()?;
    if workload == Workload::Queries
        && device == Device::Cpu
        && let Some(query_form) = current_query_form(dir)
    {
        match mapped(env, &query_form, threads) {
            Ok(graph) => return Ok((graph, Device::Cpu, query_form)),
            Err(e) => tracing::debug!("{e}; loading {} instead", onnx.display()),
        }
    }
    let (session, device) = session(env, onnx, device, threads, workload)?;
    Ok((Graph::Loaded(session), device, onnx.to_path_buf()))
}

/// The query form of the transformer in `dir`, when there is one not older than its
/// `model.onnx` (a model replaced by hand leaves a form of the old one, which must not be
/// used). What a query load tries, what install replaces, what `sift model info` reports.
pub fn current_query_form(dir: &Path) -> Option<std::path::PathBuf> {
    let form = dir.join(QUERY_FORM);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    (modified(&form)? >= modified(&dir.join("model.onnx"))?).then_some(form)
}

fn builder(
    env: &ort::environment::Environment,
    threads: usize,
    optimize: bool,
) -> ort::Result<ort::session::builder::SessionBuilder> {
    let mut b = Session::builder(env)?;
    if threads > 0 {
        b = b.with_intra_threads(threads)?;
    }
    b = b.with_inter_threads(1)?;
    if !optimize {
        b = b.with_optimization_level(GraphOptimizationLevel::Disable)?;
    }
    Ok(b)
}

/// A session over `file` (an ORT-format graph) mapped into memory, unoptimised.
#[allow(unsafe_code)]
fn mapped(
    env: &ort::environment::Environment,
    file: &Path,
    threads: usize,
) -> Result<Graph, ModelError> {
    let load_err = |e: &dyn std::fmt::Display| ModelError::Load {
        path: file.to_path_buf(),
        reason: e.to_string(),
    };
    let f = std::fs::File::open(file).map_err(|e| load_err(&e))?;
    // SAFETY: the file is sift's own, written once by `sift model install` and replaced only by
    // renaming a new directory over the model's: a mapped file is never written in place.
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| load_err(&e))?;
    // SAFETY: the session borrows the mapping's bytes; both live in the same `Graph::Mapped`,
    // where the session is dropped first, and a mapping's address does not move with its
    // owner.
    let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(map.as_ptr(), map.len()) };
    let session = builder(env, threads, false)
        .and_then(|mut b| b.commit_from_memory_directly(bytes))
        .map_err(|e| load_err(&e))?;
    Ok(Graph::Mapped { session, _file: map })
}

fn session(
    env: &ort::environment::Environment,
    onnx: &Path,
    device: Device,
    threads: usize,
    workload: Workload,
) -> Result<(Session, Device), ModelError> {
    let load_err = |e: &dyn std::fmt::Display| ModelError::Load {
        path: onnx.to_path_buf(),
        reason: e.to_string(),
    };
    if !onnx.is_file() {
        return Err(ModelError::Load { path: onnx.to_path_buf(), reason: "no such file".into() });
    }
    let builder = |cuda: bool| -> Result<Session, ModelError> {
        let mut b = builder(env, threads, workload == Workload::Bulk).map_err(|e| load_err(&e))?;
        if cuda {
            b = cuda_provider(b).map_err(|e| load_err(&e))?;
        }
        b.commit_from_file(onnx).map_err(|e| load_err(&e))
    };
    super::with_cuda_fallback(device, "embedding model", builder)
}

/// Texts the query form must embed exactly as `model.onnx` before it is kept: code, prose, a
/// word the vocabulary splits, and one longer than the model's 128 tokens.
const CHECK_TEXTS: [&str; 4] = [
    "fn parse_config(path: &Path) -> Result<Config, Error> { toml::from_str(&read(path)?) }",
    "where are database migrations applied",
    "Überprüfung der Zeichenketten-Normalisierung",
    "class QuerySet: \"\"\"Represent a lazy database lookup for a set of objects.\"\"\" def filter(self, *args, **kwargs): return self._filter_or_exclude(False, args, kwargs) def exclude(self, *args, **kwargs): return self._filter_or_exclude(True, args, kwargs) def order_by(self, *field_names): obj = self._chain(); obj.query.clear_ordering(force=True, clear_default=False); obj.query.add_ordering(*field_names); return obj",
];

/// Writes the query form ([`QUERY_FORM`]) of the transformer in `dir` (which holds
/// `model.onnx`, `tokenizer.json` and its `sift-model.toml`, described by `info`), after
/// checking that it embeds [`CHECK_TEXTS`] exactly as `model.onnx` does for queries. Returns
/// how many embedding tables it gathers before dequantising. Written under a temporary name
/// and renamed: a reader sees no query form or a whole one.
pub fn prepare_query_form(dir: &Path, info: &ModelInfo) -> Result<usize, ModelError> {
    let onnx = dir.join("model.onnx");
    let err = |reason: String| ModelError::Load { path: onnx.clone(), reason };
    let bytes = std::fs::read(&onnx).map_err(|e| err(e.to_string()))?;
    let (rewritten, tables) = super::onnx_graph::gather_before_dequantize(&bytes).map_err(err)?;
    let env = ort_env()?;
    let tmp = dir.join(format!("{QUERY_FORM}.tmp-{}", std::process::id()));
    // onnxruntime writes the graph it loaded, unoptimised, in its own format.
    let write = || -> ort::Result<()> {
        let mut b = builder(env, 0, false)?
            .with_config_entry("session.save_model_format", "ORT")?
            .with_optimized_model_path(&tmp)?;
        b.commit_from_memory(&rewritten).map(drop)
    };
    let written = write();
    let checked = written.map_err(|e| err(e.to_string())).and_then(|()| {
        // model.onnx as queries load it without a query form, and the new form.
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"), Some(info.max_tokens))?;
        let (plain, _) = session(env, &onnx, Device::Cpu, 0, Workload::Queries)?;
        let reference = TransformerEmbedder::assemble(
            info,
            tokenizer.clone(),
            Graph::Loaded(plain),
            Device::Cpu,
            onnx.clone(),
        )?;
        let query = TransformerEmbedder::assemble(
            info,
            tokenizer,
            mapped(env, &tmp, 0)?,
            Device::Cpu,
            tmp.clone(),
        )?;
        for text in CHECK_TEXTS {
            let embed = |m: &TransformerEmbedder| m.embed(&[text], TextKind::Query);
            let same = matches!((embed(&reference), embed(&query)), (Ok(a), Ok(b)) if a == b);
            if !same {
                return Err(err(format!(
                    "its query form does not embed {text:?} exactly as it does; queries use model.onnx"
                )));
            }
        }
        Ok(())
    });
    let result = checked
        .and_then(|()| std::fs::rename(&tmp, dir.join(QUERY_FORM)).map_err(|e| err(e.to_string())));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| tables)
}

#[cfg(feature = "cuda")]
pub(crate) fn cuda_provider(
    b: ort::session::builder::SessionBuilder,
) -> Result<ort::session::builder::SessionBuilder, String> {
    b.with_execution_providers([ort::ep::CUDA::default().build().error_on_failure()])
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn cuda_provider(
    _b: ort::session::builder::SessionBuilder,
) -> Result<ort::session::builder::SessionBuilder, String> {
    Err("this sift was built without the `cuda` feature".into())
}
