#!/usr/bin/env bash
# Makes llm-reference.json: onnxruntime's own Python generation (runtime/python/llm_reference.py,
# greedy, KV cache) over the installed language model, for runtime/tests/llm_onnx.rs to match.
# Needs a Python with numpy, onnxruntime and tokenizers (PYTHON, default python3) and the model
# (`sift model install --llm`; MODEL_DIR, default $SIFT_HOME/models/gemma-3-270m).
set -euo pipefail
cd "$(dirname "$0")"
home="${SIFT_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/sift}"
model="${MODEL_DIR:-$home/models/gemma-3-270m}"
"${PYTHON:-python3}" ../../python/llm_reference.py --model "$model" --threads 2 generate \
    --prompt "The capital of France is Paris. The capital of Italy is" -n 40 > llm-reference.json
