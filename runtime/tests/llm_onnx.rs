//! The local language model (runtime/src/llm/onnx.rs) on the real converted Gemma 3 270M that
//! `sift model install --llm` puts in sift's model directory, compared with onnxruntime's own
//! Python generation (runtime/python/llm_reference.py, on the pinned Python packages the same
//! install puts in `$SIFT_HOME/python/llm-reference`) run on this machine. Skipped (with a
//! message) when either is not installed, unless `SIFT_REQUIRE_MODEL=1` (set by scripts/test.sh
//! after installing them), which makes that a failure.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sift_runtime::embed::Device;
use sift_runtime::llm::install::{
    is_installed, llm_dir, reference_dir, reference_installed, reference_python,
};
use sift_runtime::llm::onnx::OnnxModel;
use sift_runtime::llm::{
    Cancel, ChatRequest, FinishReason, GenerationParams, LanguageModel, LlmError, Message,
};

/// Intra-op threads, for sift and for the Python reference alike.
const THREADS: usize = 2;

/// How many greedy tokens after the reference prompt agree on every processor they were compared
/// on: an AVX2 one (the reference committed first; reproduced under `qemu-x86_64 -cpu Haswell`),
/// this reference's AMD EPYC with AVX-512 VNNI (onnxruntime 1.30, 1.31.1 and 1.32.0 alike), an
/// Intel Xeon and the H200 machine's processor all give the first 12, then some diverge
/// (" the United States is Washington" against " Japan is Tokyo"). onnxruntime's 8-bit
/// `MatMulNBits` kernels take processor-specific code paths whose logits differ in the last
/// bits, and greedy decoding follows such a difference once two candidates are nearly tied.
const AGREED_EVERYWHERE: usize = 12;

/// What is missing: a skip that says so, or with `SIFT_REQUIRE_MODEL=1` a failure.
fn missing<T>(what: &str) -> Option<T> {
    sift_test_support::guard::missing(
        sift_test_support::guard::Need::Model,
        what,
        "run `sift model install --llm`",
    );
    None
}

fn model() -> Option<OnnxModel> {
    if !is_installed() {
        return missing(&format!("the language model is not in {}", llm_dir().display()));
    }
    Some(
        OnnxModel::open(&llm_dir(), Device::Cpu, Some(THREADS)).expect("the installed model loads"),
    )
}

/// What runtime/tests/data/make_llm_reference.sh recorded from onnxruntime in Python; the
/// generate command of runtime/python/llm_reference.py prints the same fields.
#[derive(Deserialize)]
struct Generation {
    prompt: String,
    prompt_ids: Vec<u32>,
    greedy_ids: Vec<u32>,
    text: String,
    onnxruntime: String,
    cpu: Cpu,
}

/// A processor as llm_reference.py's `cpu()` describes it.
#[derive(Deserialize)]
struct Cpu {
    vendor: String,
    model_name: String,
    /// The x86 features onnxruntime picks its kernels by, and whether the processor has each.
    isa: BTreeMap<String, bool>,
}

impl Cpu {
    /// This machine's processor from /proc/cpuinfo's first entry, described by the features
    /// `like` lists (None where there is no /proc/cpuinfo; under qemu-user it is the host's).
    fn this_machine(like: &Cpu) -> Option<Cpu> {
        let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let fields: BTreeMap<&str, &str> = text
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let flags: Vec<&str> = fields.get("flags").map_or(Vec::new(), |f| f.split(' ').collect());
        Some(Cpu {
            vendor: fields.get("vendor_id")?.to_string(),
            model_name: fields.get("model name").unwrap_or(&"").to_string(),
            isa: like.isa.keys().map(|k| (k.clone(), flags.contains(&k.as_str()))).collect(),
        })
    }

    /// "vendor (model name; the features it has)".
    fn describe(&self) -> String {
        let has: Vec<&str> =
            self.isa.iter().filter(|(_, has)| **has).map(|(f, _)| f.as_str()).collect();
        format!("{} ({}; {})", self.vendor, self.model_name, has.join(" "))
    }

    /// Whether onnxruntime takes the same kernels on both (the model name aside: virtual
    /// machines report generic ones).
    fn same_kernels(&self, other: &Cpu) -> bool {
        self.vendor == other.vendor && self.isa == other.isa
    }
}

fn reference() -> Generation {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/llm-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// onnxruntime's own Python generation on this machine: `n` greedy tokens after `prompt`, from
/// the installed model, on [`THREADS`] threads.
fn python_generation(prompt: &str, n: usize) -> Option<Generation> {
    if !reference_installed() {
        return missing(&format!(
            "onnxruntime's Python API (the reference) is not in {}",
            reference_dir().display()
        ));
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/llm_reference.py");
    let out = reference_python()
        .arg(&script)
        .arg("--model")
        .arg(llm_dir())
        .args(["--threads", &THREADS.to_string(), "generate", "--prompt", prompt])
        .args(["-n", &n.to_string()])
        .output()
        .expect("the reference's python3 runs");
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("llm_reference.py prints its JSON"))
}

/// sift's greedy generation from prompt ids: the ids, the streamed text and what generate_ids
/// returned.
fn sift_generation(
    model: &OnnxModel,
    prompt: &[u32],
    n: usize,
) -> (Vec<u32>, String, (String, FinishReason, usize)) {
    let mut ids = Vec::new();
    let mut streamed = String::new();
    let params = greedy(n as u32, &[]);
    let returned = model
        .generate_ids(prompt, &params, &Cancel::new(), &mut |t| ids.push(t), &mut |s| {
            streamed.push_str(s)
        })
        .unwrap();
    (ids, streamed, returned)
}

/// The version of the onnxruntime library sift loads (`libonnxruntime.so.VERSION`), when its
/// file name tells.
fn onnxruntime_version() -> Option<String> {
    let lib = sift_runtime::embed::find_onnxruntime(None).ok()?;
    let name = lib.file_name()?.to_str()?;
    Some(name.strip_prefix("libonnxruntime.so.")?.to_owned())
}

/// How many leading tokens two sequences share.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn greedy(max_tokens: u32, stop: &[&str]) -> GenerationParams {
    GenerationParams {
        max_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
        ..GenerationParams::default()
    }
}

/// The parity check: sift and onnxruntime in Python, the same model files, prompt, token count
/// and threads, on this machine, so on any processor they run the same kernels. Only the prompt
/// and the count come from the committed file.
#[test]
fn greedy_generation_matches_onnxruntime_in_python() {
    let Some(model) = model() else { return };
    let r = reference();
    let n = r.greedy_ids.len();
    let started = Instant::now();
    let Some(py) = python_generation(&r.prompt, n) else { return };
    eprintln!(
        "onnxruntime {} in Python: {n} greedy tokens in {:.1?} (start-up included)",
        py.onnxruntime,
        started.elapsed()
    );
    // The same onnxruntime release on both sides.
    match onnxruntime_version() {
        Some(version) => assert_eq!(
            version, py.onnxruntime,
            "sift runs onnxruntime {version} but the reference onnxruntime {}",
            py.onnxruntime
        ),
        None => eprintln!("note: cannot tell which onnxruntime sift runs"),
    }
    let mut prompt = vec![model.info().bos_token_id];
    prompt.extend(model.encode(&r.prompt).unwrap());
    assert_eq!(prompt, py.prompt_ids, "the tokenizer disagrees with Python's");
    assert_eq!(py.greedy_ids.len(), n);
    assert!(n >= 32);
    let (ids, streamed, (text, finish, generated)) = sift_generation(&model, &prompt, n);
    assert_eq!(
        ids,
        py.greedy_ids,
        "greedy tokens differ from onnxruntime in Python on this machine from token {}",
        common_prefix(&ids, &py.greedy_ids)
    );
    assert_eq!((finish, generated), (FinishReason::Length, n));
    assert_eq!(text, py.text, "the streamed decode differs from the tokenizer's decode");
    assert_eq!(streamed, text);
}

/// The committed tokens as a cross-check that needs no Python: a change of the model, the
/// converter or onnxruntime shows here even when both sides of the parity check moved together.
/// All of them are compared only with the onnxruntime release and on a processor with the
/// vendor and kernel-relevant features they were recorded with; elsewhere only the first
/// [`AGREED_EVERYWHERE`], and the test says so.
#[test]
fn greedy_generation_keeps_the_committed_reference_tokens() {
    let Some(model) = model() else { return };
    let r = reference();
    let mut prompt = vec![model.info().bos_token_id];
    prompt.extend(model.encode(&r.prompt).unwrap());
    assert_eq!(prompt, r.prompt_ids, "the tokenizer disagrees with the recorded Python one");
    assert!(r.greedy_ids.len() > AGREED_EVERYWHERE);
    let (ids, _, (text, _, _)) = sift_generation(&model, &prompt, r.greedy_ids.len());
    let same = common_prefix(&ids, &r.greedy_ids);
    assert!(
        same >= AGREED_EVERYWHERE,
        "only the first {same} committed tokens agree, fewer than the {AGREED_EVERYWHERE} that agree on every processor: the model, the converter or onnxruntime changed"
    );
    let here = Cpu::this_machine(&r.cpu);
    let same_cpu = here.as_ref().is_some_and(|c| c.same_kernels(&r.cpu));
    let ort = onnxruntime_version();
    if same_cpu && ort.as_deref() == Some(r.onnxruntime.as_str()) {
        assert_eq!(
            ids,
            r.greedy_ids,
            "tokens differ from token {same} with the onnxruntime ({}) and the kind of processor ({}) the reference was recorded with",
            r.onnxruntime,
            r.cpu.describe()
        );
        assert_eq!(text, r.text);
    } else {
        eprintln!(
            "note: compared the first {AGREED_EVERYWHERE} of {} committed tokens only ({same} agree): they were recorded with onnxruntime {} on {}, this is onnxruntime {} on {}; greedy_generation_matches_onnxruntime_in_python compares all of them with onnxruntime in Python here",
            r.greedy_ids.len(),
            r.onnxruntime,
            r.cpu.describe(),
            ort.as_deref().unwrap_or("(unknown version)"),
            here.map_or("an unknown processor (no /proc/cpuinfo)".into(), |c| c.describe()),
        );
    }
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
