//! The embedding models on the real weights that `sift model install` puts in sift's model
//! directory. Skipped (with a message) when they are not installed, unless
//! `SIFT_REQUIRE_MODEL=1` (set by scripts/test.sh after installing them), which makes that a
//! failure.

use std::path::PathBuf;

use serde::Deserialize;
use sift_indexer::embed::{TextKind, embed_text};
use sift_runtime::embed::{self, EmbedConfig, ModelError, install};

fn installed() -> bool {
    if install::is_installed() {
        return true;
    }
    if std::env::var("SIFT_REQUIRE_MODEL").as_deref() == Ok("1") {
        panic!(
            "SIFT_REQUIRE_MODEL=1 but the models are not in {}: run `sift model install`",
            embed::sift_home().display()
        );
    }
    eprintln!("skipped: the models are not installed (run `sift model install`)");
    false
}

fn config(model: &str) -> EmbedConfig {
    EmbedConfig { model: Some(model.into()), enabled: true, ..EmbedConfig::default() }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[derive(Deserialize)]
struct Reference {
    embeddings: Vec<RefVector>,
}

#[derive(Deserialize)]
struct RefVector {
    text: String,
    tokens: usize,
    vector: Vec<f32>,
}

fn reference() -> Reference {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/minilm-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn transformer_matches_onnxruntime_in_python() {
    if !installed() {
        return;
    }
    let model = embed::load(&config(install::TRANSFORMER)).unwrap();
    assert_eq!(model.device, Some(embed::Device::Cpu));
    let reference = reference();
    let texts: Vec<&str> = reference.embeddings.iter().map(|r| r.text.as_str()).collect();
    // All at once (padded to the longest) and one by one must both match the reference, which
    // was computed one text at a time without padding.
    let batched = model.embedder.embed(&texts, TextKind::Document).unwrap();
    for (r, got) in reference.embeddings.iter().zip(&batched) {
        assert_eq!(got.len(), 384);
        let sim = cosine(got, &r.vector);
        assert!(sim > 0.999, "{:?}: cosine {sim} with the reference", r.text);
        let single = model.embedder.embed(&[r.text.as_str()], TextKind::Query).unwrap();
        assert!(cosine(&single[0], &r.vector) > 0.999, "{:?} alone", r.text);
    }
    // The long text was truncated to the model's budget, like the reference.
    assert_eq!(reference.embeddings[4].tokens, 128);
}

#[test]
fn long_inputs_truncate_and_odd_inputs_embed() {
    if !installed() {
        return;
    }
    for name in [install::TRANSFORMER, install::STATIC] {
        let model = embed::load(&config(name)).unwrap();
        let e = |t: &str| model.embedder.embed(&[t], TextKind::Document).unwrap().pop().unwrap();
        let huge = "parse the configuration file ".repeat(20_000);
        let v = e(&huge);
        assert_eq!(v.len(), 384, "{name}");
        assert!((cosine(&v, &v) - 1.0).abs() < 1e-3, "{name}: normalised");
        for odd in ["", "   ", "\u{0}\u{1}", "😀🚀", "Größe 文件 مرحبا"] {
            let v = e(odd);
            assert_eq!(v.len(), 384, "{name} {odd:?}");
            assert!(v.iter().all(|x| x.is_finite()), "{name} {odd:?}");
        }
    }
}

#[test]
fn both_models_put_related_code_nearer_than_unrelated_code() {
    if !installed() {
        return;
    }
    let query = "read the settings from a file on disk";
    let related = embed_text(
        "src/config/loader.rs",
        Some("load_settings"),
        None,
        "fn load_settings(path: &Path) -> io::Result<Settings> { let text = fs::read_to_string(path)?; parse(&text) }",
    );
    let unrelated = embed_text(
        "src/render/color.rs",
        Some("blend"),
        None,
        "fn blend(a: Rgba, b: Rgba, t: f32) -> Rgba { Rgba { r: lerp(a.r, b.r, t), g: lerp(a.g, b.g, t) } }",
    );
    for name in [install::TRANSFORMER, install::STATIC] {
        let model = embed::load(&config(name)).unwrap();
        let q = model.embedder.embed(&[query], TextKind::Query).unwrap().pop().unwrap();
        let docs = model.embedder.embed(&[&related, &unrelated], TextKind::Document).unwrap();
        let (r, u) = (cosine(&q, &docs[0]), cosine(&q, &docs[1]));
        assert!(r > u + 0.05, "{name}: related {r} vs unrelated {u}");
        // Deterministic: the vector cache depends on it.
        let again = model.embedder.embed(&[&related], TextKind::Document).unwrap();
        assert_eq!(again[0], docs[0], "{name}");
    }
}

#[test]
fn a_missing_or_broken_model_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let err = embed::load(&config(missing.to_str().unwrap())).err().unwrap();
    assert!(matches!(err, ModelError::NotInstalled { .. }), "{err}");
    assert!(err.to_string().contains("sift model install"), "{err}");

    // A static model whose table is cut short.
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("sift-model.toml"), "id = \"x\"\nkind = \"static\"\ndim = 384\n")
        .unwrap();
    std::fs::write(broken.join("embeddings.bin"), b"SIFTSTA1\x10\x00\x00\x00\x80\x01\x00\x00abc")
        .unwrap();
    let err = embed::load(&config(broken.to_str().unwrap())).err().unwrap();
    assert!(matches!(err, ModelError::Load { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");

    // A transformer whose graph is not ONNX.
    if installed() {
        let bad = dir.path().join("bad-onnx");
        std::fs::create_dir_all(&bad).unwrap();
        let home = embed::model_dir(install::TRANSFORMER);
        std::fs::copy(home.join("tokenizer.json"), bad.join("tokenizer.json")).unwrap();
        std::fs::write(bad.join("model.onnx"), b"this is not a model").unwrap();
        std::fs::write(
            bad.join("sift-model.toml"),
            "id = \"bad\"\nkind = \"transformer\"\ndim = 384\n",
        )
        .unwrap();
        let err = embed::load(&config(bad.to_str().unwrap())).err().unwrap();
        assert!(matches!(err, ModelError::Load { .. }), "{err}");
        assert!(err.to_string().contains("model.onnx"), "{err}");
    }
}

#[test]
fn cuda_requested_without_cuda_falls_back_to_the_cpu() {
    if !installed() {
        return;
    }
    let mut cfg = config(install::TRANSFORMER);
    cfg.device = embed::Device::Cuda;
    let model = embed::load(&cfg).unwrap();
    // This machine has no GPU (or this build has no CUDA): the model still runs, on the CPU.
    if std::env::var_os("SIFT_EXPECT_CUDA").is_none() {
        assert_eq!(model.device, Some(embed::Device::Cpu));
    }
    let v = model.embedder.embed(&["hello"], TextKind::Query).unwrap();
    assert_eq!(v[0].len(), 384);
}
