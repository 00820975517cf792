#!/usr/bin/env bash
# The local language model's speed, sift's Rust backend (runtime/src/llm/onnx.rs, through the
# runtime/examples/llm_bench.rs example) against onnxruntime's own Python generation
# (runtime/python/llm_reference.py) in the same run, on the same prompt, same threads:
# prompt tokens/s (time to first token for a PROMPT_TOKENS-token prompt) and generation
# tokens/s (greedy, GEN_TOKENS tokens), and sift/reference ratios.
#
#   bench/llm-bench.sh                   # 1,000-token prompt, 64 generated tokens
#   PROMPT_TOKENS=200 GEN_TOKENS=32 THREADS=2 DEVICE=cuda bench/llm-bench.sh
#
# Needs the model (`sift model install --llm`; MODEL_DIR overrides) and a Python with numpy,
# onnxruntime and tokenizers (PYTHON, default python3). The example is built in the dev profile
# (sift-runtime's own code unoptimised, its dependencies at opt-level 2; the time is spent in
# onnxruntime either way); BENCH_PROFILE=release builds it in release instead.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${SIFT_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/sift}"
model="${MODEL_DIR:-$home/models/gemma-3-270m}"
prompt="${PROMPT_TOKENS:-1000}"
gen="${GEN_TOKENS:-64}"
threads="${THREADS:-$(nproc)}"
device="${DEVICE:-cpu}"
python="${PYTHON:-python3}"
[[ -f "$model/model.onnx" ]] || { echo "error: no model in $model: run sift model install --llm" >&2; exit 1; }

profile_flag=()
[[ "${BENCH_PROFILE:-dev}" == release ]] && profile_flag=(--release)
features=()
[[ "$device" == cuda ]] && features=(--features cuda)
echo "==> building runtime/examples/llm_bench.rs" >&2
cargo build -q -p sift-runtime --example llm_bench "${profile_flag[@]}" "${features[@]}"
target="${CARGO_TARGET_DIR:-target}/$([[ ${BENCH_PROFILE:-dev} == release ]] && echo release || echo debug)"
bin="$target/examples/llm_bench"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "==> sift (Rust, ort): $prompt-token prompt, $gen generated, $threads threads, $device" >&2
"$bin" "$model" "$prompt" "$gen" "$threads" "$device" > "$out/sift.json" 2> "$out/sift.err" \
    || { cat "$out/sift.err" >&2; exit 1; }
cat "$out/sift.err" >&2
echo "==> reference (Python, onnxruntime)" >&2
if [[ "$device" == cuda ]]; then
    echo "   (the Python reference runs on the CPU; its numbers are for comparison only)" >&2
fi
"$python" runtime/python/llm_reference.py --model "$model" --threads "$threads" bench \
    --prompt-tokens "$prompt" -n "$gen" > "$out/ref.json"
"$python" - "$out/sift.json" "$out/ref.json" "$out/sift.err" <<'PY'
import json, sys
s, r = (json.load(open(p)) for p in sys.argv[1:3])
notice = "CUDA is not available" in open(sys.argv[3]).read()
print(f"model: {s['model']} (device {s['device']}{', CUDA fallback notice seen' if notice else ''})")
print(f"{'':24}{'sift':>10}{'python ref':>12}{'sift/ref':>10}")
for key, label in (("prompt_tok_per_s", "prompt tokens/s"), ("gen_tok_per_s", "generation tokens/s")):
    print(f"{label:24}{s[key]:>10}{r[key]:>12}{s[key] / r[key]:>10.2f}")
print(f"{'time to first token (s)':24}{s['ttft_s']:>10}{r['ttft_s']:>12}{s['ttft_s'] / r['ttft_s']:>10.2f}")
print(f"prompt {s['prompt_tokens']} tokens, generated {s['generated_tokens']} (sift) / {r['generated_tokens']} (ref)")
print(json.dumps({"sift": s, "reference": r}))
PY
