//! The local language model (runtime/src/llm/onnx.rs) on the real converted Gemma 3 270M that
//! `sift model install --llm` puts in sift's model directory. Skipped (with a message) when it
//! is not installed, unless `SIFT_REQUIRE_MODEL=1` (set by scripts/test.sh after installing
//! it), which makes that a failure.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sift_runtime::embed::Device;
use sift_runtime::llm::install::{is_installed, llm_dir};
use sift_runtime::llm::onnx::OnnxModel;
use sift_runtime::llm::{
    Cancel, ChatRequest, FinishReason, GenerationParams, LanguageModel, LlmError, Message,
};

fn model() -> Option<OnnxModel> {
    if !is_installed() {
        if std::env::var("SIFT_REQUIRE_MODEL").as_deref() == Ok("1") {
            panic!(
                "SIFT_REQUIRE_MODEL=1 but the language model is not in {}: run `sift model install --llm`",
                llm_dir().display()
            );
        }
        eprintln!("skipped: the language model is not installed (run `sift model install --llm`)");
        return None;
    }
    Some(OnnxModel::open(&llm_dir(), Device::Cpu, Some(2)).expect("the installed model loads"))
}

/// What runtime/tests/data/make_llm_reference.sh recorded from onnxruntime in Python.
#[derive(Deserialize)]
struct Reference {
    prompt: String,
    prompt_ids: Vec<u32>,
    greedy_ids: Vec<u32>,
    text: String,
}

fn reference() -> Reference {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/llm-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn greedy(max_tokens: u32, stop: &[&str]) -> GenerationParams {
    GenerationParams {
        max_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
        ..GenerationParams::default()
    }
}

#[test]
fn greedy_generation_matches_onnxruntime_in_python() {
    let Some(model) = model() else { return };
    let r = reference();
    let mut prompt = vec![model.info().bos_token_id];
    prompt.extend(model.encode(&r.prompt).unwrap());
    assert_eq!(prompt, r.prompt_ids, "the tokenizer disagrees with Python's");
    let mut ids = Vec::new();
    let mut streamed = String::new();
    let params = greedy(r.greedy_ids.len() as u32, &[]);
    let (text, finish, n) = model
        .generate_ids(&prompt, &params, &Cancel::new(), &mut |t| ids.push(t), &mut |s| {
            streamed.push_str(s)
        })
        .unwrap();
    assert!(r.greedy_ids.len() >= 32);
    assert_eq!(ids, r.greedy_ids, "greedy tokens differ from onnxruntime in Python");
    assert_eq!((finish, n), (FinishReason::Length, r.greedy_ids.len()));
    assert_eq!(text, r.text, "the streamed decode differs from the tokenizer's decode");
    assert_eq!(streamed, text);
}

#[test]
fn a_stop_sequence_ends_generation_before_it() {
    let Some(model) = model() else { return };
    let r = reference();
    let request = ChatRequest {
        messages: vec![Message::user("x")],
        params: greedy(40, &[" Berlin"]),
        ..ChatRequest::default()
    };
    // Plain generation (no chat template) so the continuation is the reference's.
    let mut streamed = String::new();
    let (text, finish, n) = model
        .generate(&r.prompt_ids, &request.params, &Cancel::new(), &mut |s| streamed.push_str(s))
        .unwrap();
    assert_eq!(finish, FinishReason::StopSequence);
    assert_eq!(text, " Rome. The capital of Germany is");
    assert_eq!(streamed, text, "no part of the stop sequence is streamed");
    assert!(n < 40);
    assert!(r.text.starts_with(&format!("{text} Berlin")));
}

#[test]
fn cancelling_from_another_thread_stops_promptly() {
    let Some(model) = model() else { return };
    let cancel = Cancel::new();
    let request = ChatRequest {
        messages: vec![Message::user("Write a very long story about a lighthouse.")],
        params: GenerationParams { max_tokens: 4000, ..GenerationParams::default() },
        ..ChatRequest::default()
    };
    let canceller = cancel.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        // Cancel once the model has streamed something.
        rx.recv().unwrap();
        canceller.cancel();
        Instant::now()
    });
    let mut sent = false;
    let mut pieces = 0;
    let response = model
        .chat(&request, &cancel, &mut |_| {
            pieces += 1;
            if !sent {
                sent = true;
                tx.send(()).unwrap();
            }
        })
        .unwrap();
    let returned = Instant::now();
    let cancelled_at = thread.join().unwrap();
    // The model may end its turn by itself before the cancel lands; it must not keep going.
    if response.finish != FinishReason::Stop {
        assert_eq!(response.finish, FinishReason::Cancelled);
    }
    assert!(response.usage.completion_tokens < 100, "{:?}", response.usage);
    assert!(
        returned.duration_since(cancelled_at) < Duration::from_secs(3),
        "generation went on {:?} after the cancel",
        returned.duration_since(cancelled_at)
    );
    assert!(pieces >= 1);
}

#[test]
fn a_prompt_over_the_context_window_is_context_overflow() {
    let Some(model) = model() else { return };
    let window = model.describe().context_window;
    let long = "word ".repeat(window + 100);
    let request = ChatRequest { messages: vec![Message::user(long)], ..ChatRequest::default() };
    let started = Instant::now();
    match model.chat(&request, &Cancel::new(), &mut |_| panic!("nothing is generated")) {
        Err(LlmError::ContextOverflow { prompt, window: w }) => {
            assert_eq!(w, window);
            assert!(prompt > window, "{prompt} tokens");
        }
        other => panic!("expected ContextOverflow, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(30), "the check must come before running");
}

#[test]
fn chat_describes_counts_and_answers() {
    let Some(model) = model() else { return };
    let d = model.describe();
    assert_eq!(
        (d.backend.as_str(), d.name.as_str(), d.device.as_str()),
        ("onnx", "gemma-3-270m", "cpu")
    );
    let r = reference();
    let count = model.count_tokens(&r.prompt);
    // Python's count, less the beginning-of-sequence token it added.
    assert_eq!((count.tokens, count.exact), (r.prompt_ids.len() - 1, true));
    let request = ChatRequest {
        messages: vec![Message::system("Answer briefly."), Message::user("What is 2 + 2?")],
        params: greedy(16, &[]),
        ..ChatRequest::default()
    };
    let prompt = model.render_prompt(&request).unwrap();
    assert!(prompt.starts_with("<bos><start_of_turn>user\nAnswer briefly.\n\nWhat is 2 + 2?"));
    let mut streamed = String::new();
    let response = model.chat(&request, &Cancel::new(), &mut |s| streamed.push_str(s)).unwrap();
    assert_eq!(response.usage.prompt_tokens as usize, model.encode(&prompt).unwrap().len());
    assert!(matches!(response.finish, FinishReason::Stop | FinishReason::Length));
    assert!(response.usage.completion_tokens >= 1 && response.usage.completion_tokens <= 16);
    assert_eq!(streamed, response.message.content);
}

#[test]
fn a_missing_model_directory_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    match OnnxModel::open(&dir.path().join("nothing"), Device::Cpu, None) {
        Err(LlmError::Load(msg)) => {
            assert!(
                msg.contains("sift-model.toml") && msg.contains("sift model install --llm"),
                "{msg}"
            )
        }
        Err(other) => panic!("expected a load error, got {other}"),
        Ok(_) => panic!("expected a load error"),
    }
}

#[test]
fn a_broken_model_file_is_a_load_error() {
    let Some(_) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    for f in ["sift-model.toml", "tokenizer.json", "chat_template.jinja"] {
        std::fs::copy(llm_dir().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("model.onnx"), b"not an onnx file").unwrap();
    match OnnxModel::open(dir.path(), Device::Cpu, None) {
        Err(LlmError::Load(msg)) => assert!(msg.contains("model.onnx"), "{msg}"),
        Err(other) => panic!("expected a load error, got {other}"),
        Ok(_) => panic!("expected a load error"),
    }
}
