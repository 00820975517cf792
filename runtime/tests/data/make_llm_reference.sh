#!/usr/bin/env bash
# Makes llm-reference.json: onnxruntime's own Python generation (runtime/python/llm_reference.py,
# greedy, KV cache) over the installed language model, with the processor it ran on. The tests
# in runtime/tests/llm_onnx.rs take the prompt and token count from it and compare sift with a
# fresh Python run on their own machine; the recorded tokens are a cross-check (onnxruntime's
# 8-bit kernels give other tokens on other processors after a dozen, see there).
# Needs the model and the Python packages as `sift model install --llm` installs them
# (MODEL_DIR, default $SIFT_HOME/models/gemma-3-270m; $SIFT_HOME/python/llm-reference goes on
# PYTHONPATH), or PYTHON: a python3 with numpy, onnxruntime and tokenizers.
set -euo pipefail
cd "$(dirname "$0")"
home="${SIFT_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/sift}"
model="${MODEL_DIR:-$home/models/gemma-3-270m}"
if [[ -z "${PYTHON:-}" ]]; then
    export PYTHONPATH="$home/python/llm-reference" PYTHONNOUSERSITE=1
fi
"${PYTHON:-python3}" ../../python/llm_reference.py --model "$model" --threads 2 generate \
    --prompt "The capital of France is Paris. The capital of Italy is" -n 40 > llm-reference.json
