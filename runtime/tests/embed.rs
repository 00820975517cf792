//! The embedding models on the real weights that `sift model install` puts in sift's model
//! directory. Skipped (with a message) when they are not installed, unless
//! `SIFT_REQUIRE_MODEL=1` (set by scripts/test.sh after installing them), which makes that a
//! failure.

use std::path::PathBuf;

use serde::Deserialize;
use sift_indexer::embed::{TextKind, embed_text};
use sift_runtime::embed::{self, EmbedConfig, ModelError, install};
use sift_test_support::guard::Need;

fn installed() -> bool {
    if install::is_installed() {
        return true;
    }
    let what = format!("the models are not in {}", embed::sift_home().display());
    sift_test_support::guard::missing(Need::Model, &what, "run `sift model install`");
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

/// A copy of the installed transformer's directory without its query form (links to its files).
fn without_query_form(parent: &std::path::Path) -> PathBuf {
    let home = embed::model_dir(install::TRANSFORMER);
    let plain = parent.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for file in ["model.onnx", "tokenizer.json", "sift-model.toml"] {
        std::os::unix::fs::symlink(home.join(file), plain.join(file)).unwrap();
    }
    plain
}

#[test]
fn queries_load_the_query_form_which_embeds_exactly_as_the_model() {
    use sift_indexer::embed::Embedder;
    use sift_runtime::embed::Workload;
    use sift_runtime::embed::transformer::{QUERY_FORM, TransformerEmbedder};
    if !installed() {
        return;
    }
    let home = embed::model_dir(install::TRANSFORMER);
    // `sift model install` writes it, also into an install from before it existed.
    assert!(home.join(QUERY_FORM).is_file(), "no {QUERY_FORM}: run `sift model install`");
    let info = embed::model_info(&home, install::TRANSFORMER).unwrap();
    let load = |dir: &std::path::Path, workload| {
        TransformerEmbedder::load(dir, &info, embed::Device::Cpu, 0, workload).unwrap()
    };
    let query = load(&home, Workload::Queries);
    assert!(query.file().ends_with(QUERY_FORM), "{}", query.file().display());
    // Indexing keeps the original graph (optimised by onnxruntime at load).
    assert!(load(&home, Workload::Bulk).file().ends_with("model.onnx"));
    // The same graph without the query form: bit for bit the same vectors, one text at a time
    // and padded in a batch.
    let tmp = tempfile::tempdir().unwrap();
    let plain = load(&without_query_form(tmp.path()), Workload::Queries);
    assert!(plain.file().ends_with("model.onnx"));
    let reference = reference();
    let texts: Vec<&str> = reference.embeddings.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(
        query.embed(&texts, TextKind::Query).unwrap(),
        plain.embed(&texts, TextKind::Query).unwrap()
    );
    for (r, text) in reference.embeddings.iter().zip(&texts) {
        let v = query.embed(&[text], TextKind::Query).unwrap();
        assert_eq!(v, plain.embed(&[text], TextKind::Query).unwrap(), "{text:?}");
        assert!(cosine(&v[0], &r.vector) > 0.999, "{text:?} against the Python reference");
    }
    // And `load_for_queries`, what a CLI search calls, is that form.
    let model = embed::load_for_queries(&config(install::TRANSFORMER)).unwrap();
    assert_eq!(
        model.embedder.embed(&[texts[0]], TextKind::Query).unwrap(),
        query.embed(&[texts[0]], TextKind::Query).unwrap()
    );
}

#[test]
fn the_query_form_is_prepared_checked_and_never_trusted_blindly() {
    use sift_runtime::embed::Workload;
    use sift_runtime::embed::transformer::{QUERY_FORM, TransformerEmbedder, prepare_query_form};
    if !installed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = without_query_form(tmp.path());
    let info = embed::model_info(&dir, install::TRANSFORMER).unwrap();
    // all-MiniLM-L6-v2's word and position tables are stored as int8 rows with a scale each.
    assert_eq!(prepare_query_form(&dir, &info).unwrap(), 2);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["model.onnx", QUERY_FORM, "sift-model.toml", "tokenizer.json"]);

    let queries = || {
        TransformerEmbedder::load(&dir, &info, embed::Device::Cpu, 0, Workload::Queries).unwrap()
    };
    assert!(queries().file().ends_with(QUERY_FORM));

    // model.onnx replaced after the query form was written: the form is of the old model.
    let onnx = dir.join("model.onnx");
    std::fs::remove_file(&onnx).unwrap();
    std::fs::copy(embed::model_dir(install::TRANSFORMER).join("model.onnx"), &onnx).unwrap();
    let form_written = std::fs::metadata(dir.join(QUERY_FORM)).unwrap().modified().unwrap();
    let later = form_written + std::time::Duration::from_secs(1);
    std::fs::File::options().write(true).open(&onnx).unwrap().set_modified(later).unwrap();
    assert!(queries().file().ends_with("model.onnx"));

    // A query form that does not load (damaged, or written by another onnxruntime): queries
    // load model.onnx instead.
    std::fs::write(dir.join(QUERY_FORM), b"ORTM but not really").unwrap();
    let damaged = std::fs::File::options().write(true).open(dir.join(QUERY_FORM)).unwrap();
    damaged.set_modified(later + std::time::Duration::from_secs(1)).unwrap();
    let model = queries();
    assert!(model.file().ends_with("model.onnx"));
    use sift_indexer::embed::Embedder;
    assert_eq!(model.embed(&["hello"], TextKind::Query).unwrap()[0].len(), 384);

    // A graph that is not ONNX: an error, and nothing left behind.
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("model.onnx"), b"\x3a\x05hello").unwrap();
    let err = prepare_query_form(&bad, &info).unwrap_err();
    assert!(matches!(err, ModelError::Load { .. }), "{err}");
    assert_eq!(std::fs::read_dir(&bad).unwrap().count(), 1, "only model.onnx is there");
}
