//! What a CLI search pays for its query's embedding with the transformer: load the model for
//! queries and embed one question, from `model.onnx` and from its query form (`query.ort`,
//! written by `sift model install`), alternating, in one process (onnxruntime itself starts
//! once). Also checks that both give the same vector.
//!
//! ```text
//! cargo run --release -p sift-runtime --example query_model -- [MODEL_DIR] [ROUNDS]
//! ```
//! MODEL_DIR defaults to the installed all-minilm-l6-v2. Prints one JSON line on stdout.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::Instant;

use sift_indexer::embed::{Embedder, TextKind};
use sift_runtime::embed::transformer::{QUERY_FORM, TransformerEmbedder};
use sift_runtime::embed::{self, Device, Workload, install};

const QUESTION: &str = "where are database migrations applied";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir =
        args.next().map(PathBuf::from).unwrap_or_else(|| embed::model_dir(install::TRANSFORMER));
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(20);
    let info = embed::model_info(&dir, install::TRANSFORMER).expect("an installed transformer");
    assert!(dir.join(QUERY_FORM).is_file(), "no {QUERY_FORM} in {}", dir.display());
    // The baseline: the same model without its query form.
    let plain = std::env::temp_dir().join(format!("sift-query-model-{}", std::process::id()));
    std::fs::create_dir_all(&plain).expect("a temporary directory");
    for file in ["model.onnx", "tokenizer.json", "sift-model.toml"] {
        let _ = std::fs::remove_file(plain.join(file));
        std::os::unix::fs::symlink(dir.join(file), plain.join(file)).expect("a link");
    }
    let run = |from: &PathBuf| {
        let t = Instant::now();
        let model = TransformerEmbedder::load(from, &info, Device::Cpu, 0, Workload::Queries)
            .expect("the model loads");
        let loaded = t.elapsed().as_secs_f64() * 1000.0;
        let v = model.embed(&[QUESTION], TextKind::Query).expect("it embeds");
        (loaded, t.elapsed().as_secs_f64() * 1000.0, v, model.file().to_path_buf())
    };
    let (mut onnx, mut form, mut onnx_load, mut form_load, mut ratios) =
        (vec![], vec![], vec![], vec![], vec![]);
    for round in 0..=rounds {
        let (al, a, va, fa) = run(&plain);
        let (bl, b, vb, fb) = run(&dir);
        assert!(fa.ends_with("model.onnx") && fb.ends_with(QUERY_FORM));
        assert_eq!(va, vb, "the query form embeds differently");
        if round == 0 {
            continue; // warm-up: page cache, onnxruntime's start
        }
        onnx.push(a);
        form.push(b);
        onnx_load.push(al);
        form_load.push(bl);
        ratios.push(b / a);
    }
    let _ = std::fs::remove_dir_all(&plain);
    println!(
        "{}",
        serde_json::json!({
            "rounds": rounds,
            "model_onnx_ms": {"load": median(onnx_load), "load_and_embed": median(onnx)},
            "query_form_ms": {"load": median(form_load), "load_and_embed": median(form)},
            "ratio_query_form_over_model_onnx": median(ratios),
            "same_vector": true,
        })
    );
}
