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
    session: Mutex<Session>,
    /// Whether the graph takes `token_type_ids`.
    wants_type_ids: bool,
    output: String,
    /// What actually runs the model (`cpu` after a CUDA fallback).
    pub device: Device,
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
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"), Some(info.max_tokens))?;
        let env = ort_env()?;
        let (session, device) = session(env, &onnx, device, threads, workload)?;
        let wants_type_ids = session.inputs().iter().any(|i| i.name() == "token_type_ids");
        let output = session
            .outputs()
            .iter()
            .find(|o| o.name() == "last_hidden_state")
            .or_else(|| session.outputs().first())
            .map(|o| o.name().to_string())
            .ok_or_else(|| ModelError::Load {
                path: onnx.clone(),
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
        })
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
        let mut b = Session::builder(env).map_err(|e| load_err(&e))?;
        if threads > 0 {
            b = b.with_intra_threads(threads).map_err(|e| load_err(&e))?;
        }
        b = b.with_inter_threads(1).map_err(|e| load_err(&e))?;
        if workload == Workload::Queries {
            b = b
                .with_optimization_level(GraphOptimizationLevel::Disable)
                .map_err(|e| load_err(&e))?;
        }
        if cuda {
            b = cuda_provider(b).map_err(|e| load_err(&e))?;
        }
        b.commit_from_file(onnx).map_err(|e| load_err(&e))
    };
    super::with_cuda_fallback(device, "embedding model", builder)
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
