//! The agent loop on the real local model (Gemma 3 270M, converted to ONNX by `sift model
//! install --llm`): the pipeline end to end, not its quality. The base model cannot do agent
//! work; what must hold is that a real backend's turns (its tool-call convention parsed, or
//! plain text) drive the loop to a clean end within its budget, and that nothing is written.
//! Skipped (with a message) when the model is not installed, unless `SIFT_REQUIRE_MODEL=1`
//! (set by scripts/test.sh after installing it), which makes that a failure.

use std::collections::BTreeMap;

use sift_engine::Workspace;
use sift_engine::agent::rules::Rules;
use sift_engine::agent::{self, Budget, Options, Session, Stop, Task, Transcript};
use sift_engine::embeddings::Semantic;
use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::embed::Device;
use sift_runtime::llm::install::{is_installed, llm_dir};
use sift_runtime::llm::onnx::OnnxModel;
use sift_runtime::llm::{Cancel, GenerationParams};
use sift_runtime::sandbox::{Policy, SandboxSettings};

#[test]
fn the_local_model_drives_the_loop_to_a_clean_end() {
    if !is_installed() {
        sift_test_support::guard::missing(
            sift_test_support::guard::Need::Model,
            &format!("the language model is not in {}", llm_dir().display()),
            "run `sift model install --llm`",
        );
        return;
    }
    let model = OnnxModel::open(&llm_dir(), Device::Cpu, Some(2)).expect("the model loads");
    let dir = tempfile::tempdir().unwrap();
    let text = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n";
    std::fs::write(dir.path().join("clamp.py"), text).unwrap();
    let (index, _) =
        CodeIndex::open_or_create(&sift_engine::store::open(dir.path()).unwrap()).unwrap();
    index.update(&UpdateOptions::default(), &NoProgress).unwrap();
    let workspace = Workspace::new(index, Semantic::off("lexical only")).unwrap();
    let policy = Policy::for_workspace(dir.path(), &SandboxSettings::default()).unwrap();
    let unsaved = BTreeMap::new();
    let mut session =
        Session::new(&workspace, &unsaved, &policy, &[], Rules::load(dir.path(), &[])).unwrap();
    let store = sift_engine::store::open(dir.path()).unwrap();
    let transcript = Transcript::create(&store).unwrap();
    let options = Options {
        budget: Budget { max_steps: 2, ..Budget::default() },
        params: GenerationParams { max_tokens: 32, ..GenerationParams::default() },
        ..Options::default()
    };
    let mut pieces = 0;
    let outcome = agent::run(
        &mut session,
        &model,
        Task {
            text: "Where is clamp defined?",
            resumed: vec![],
            options: &options,
            transcript: Some(&transcript),
        },
        &Cancel::new(),
        &mut |e| {
            if matches!(e, agent::Event::Text(_)) {
                pieces += 1;
            }
        },
    );
    assert!(
        matches!(outcome.stop, Stop::Done | Stop::MaxSteps),
        "the run ended badly: {:?}",
        outcome.stop
    );
    assert!(outcome.steps >= 1 && outcome.steps <= 2);
    assert!(outcome.tokens > 0);
    assert!(pieces > 0, "the model's text streamed");
    let log = std::fs::read_to_string(transcript.path()).unwrap();
    assert!(log.contains("\"role\":\"assistant\""), "{log}");
    assert_eq!(std::fs::read_to_string(dir.path().join("clamp.py")).unwrap(), text);
}
