//! Measures the local language model: prompt tokens/s, time to first token and generation
//! tokens/s, greedy, on the same deterministic prompt as `runtime/python/llm_reference.py
//! bench` (bench/llm-bench.sh runs both and reports the ratio).
//!
//! ```text
//! cargo run -p sift-runtime --example llm_bench -- MODEL_DIR [PROMPT_TOKENS] [GEN_TOKENS] [THREADS] [cpu|cuda]
//! ```
//! Prints one JSON line on stdout. `ORT_DYLIB_PATH` chooses the onnxruntime library.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::Instant;

use sift_runtime::embed::Device;
use sift_runtime::llm::onnx::OnnxModel;
use sift_runtime::llm::{Cancel, GenerationParams};

/// The same prompt as llm_reference.py's `bench_prompt`: words repeated until the text has
/// `n` tokens (the beginning-of-sequence token included), cut to `n`.
fn bench_prompt(model: &OnnxModel, n: usize) -> Vec<u32> {
    let words: Vec<&str> =
        "the quick brown fox jumps over a lazy dog while seven wizards quietly hum \
         about rivers mountains and old libraries in the north"
            .split_whitespace()
            .collect();
    let mut text: Vec<&str> = Vec::new();
    // Grow a word at a time, as the Python does, but skip ahead while far from n.
    loop {
        text.push(words[text.len() % words.len()]);
        if text.len() * 5 / 4 < n {
            continue;
        }
        let mut ids = vec![model.info().bos_token_id];
        ids.extend(model.encode(&text.join(" ")).expect("tokenizes"));
        if ids.len() >= n {
            ids.truncate(n);
            return ids;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first().expect("usage: llm_bench MODEL_DIR [PROMPT] [GEN] [THREADS] [cpu|cuda]"),
    );
    let prompt_tokens: usize = args.get(1).map_or(1000, |s| s.parse().expect("a number"));
    let gen_tokens: u32 = args.get(2).map_or(64, |s| s.parse().expect("a number"));
    let threads: usize = args.get(3).map_or(0, |s| s.parse().expect("a number"));
    let device = match args.get(4).map(String::as_str) {
        Some("cuda") => Device::Cuda,
        _ => Device::Cpu,
    };
    if let Some(lib) = std::env::var_os("ORT_DYLIB_PATH") {
        sift_runtime::embed::use_onnxruntime(PathBuf::from(lib));
    }
    let model = OnnxModel::open(&dir, device, Some(threads)).expect("the model loads");
    // PARITY_FILE=runtime/tests/data/llm-reference.json: first check that greedy generation on
    // this device gives onnxruntime-in-Python's tokens (prints one JSON line, then benches).
    if let Some(file) = std::env::var_os("PARITY_FILE") {
        let text = std::fs::read_to_string(&file).expect("the reference file reads");
        let reference: serde_json::Value = serde_json::from_str(&text).expect("reference JSON");
        let ids = |key: &str| -> Vec<u32> {
            reference[key]
                .as_array()
                .expect("an array of token ids")
                .iter()
                .map(|v| v.as_u64().expect("a token id") as u32)
                .collect()
        };
        let (prompt, want) = (ids("prompt_ids"), ids("greedy_ids"));
        let mut got = Vec::new();
        let params = GenerationParams {
            max_tokens: want.len() as u32,
            stop: Vec::new(),
            ..GenerationParams::default()
        };
        model
            .generate_ids(&prompt, &params, &Cancel::new(), &mut |id| got.push(id), &mut |_| {})
            .expect("generates");
        let same = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        println!(
            "{{\"parity\": {{\"device\": \"{}\", \"identical_prefix\": {same}, \"reference_tokens\": {}}}}}",
            model.device(),
            want.len()
        );
    }
    let prompt = bench_prompt(&model, prompt_tokens);
    let params = GenerationParams { max_tokens: gen_tokens, ..GenerationParams::default() };
    let no_eos = GenerationParams { stop: Vec::new(), ..params.clone() };
    // Warm-up.
    model
        .generate(
            &prompt[..16],
            &GenerationParams { max_tokens: 4, ..no_eos.clone() },
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    let mut best: Option<(f64, f64, usize)> = None;
    for _ in 0..2 {
        let start = Instant::now();
        let mut times = Vec::new();
        model
            .generate_ids(
                &prompt,
                &no_eos,
                &Cancel::new(),
                &mut |_| times.push(start.elapsed().as_secs_f64()),
                &mut |_| {},
            )
            .unwrap();
        let ttft = times[0];
        let decode = times.last().unwrap() - ttft;
        let run = (ttft, decode, times.len());
        if best.is_none_or(|b| run.0 + run.1 < b.0 + b.1) {
            best = Some(run);
        }
    }
    let (ttft, decode, n) = best.unwrap();
    println!(
        "{{\"backend\": \"sift-rust-ort\", \"model\": \"{}\", \"device\": \"{}\", \"prompt_tokens\": {}, \"generated_tokens\": {n}, \"ttft_s\": {ttft:.4}, \"prompt_tok_per_s\": {:.1}, \"gen_tok_per_s\": {:.1}}}",
        model.info().id,
        model.device(),
        prompt.len(),
        prompt.len() as f64 / ttft,
        (n.saturating_sub(1)) as f64 / decode.max(1e-9),
    );
}
