#!/usr/bin/env bash
# The local language model on an NVIDIA GPU (onnxruntime's CUDA execution provider): runs
# bench/llm-bench.sh with DEVICE=cuda and says whether CUDA was really used. Prepared for a
# device machine; not run on the CPU-only development machines.
#
#   ORT_DYLIB_PATH=/path/to/onnxruntime_gpu/.../libonnxruntime.so.1.32.0 \
#   MODEL_DIR=$SIFT_HOME/models/gemma-3-270m bench/llm-gpu.sh
#
# Needs: the library from PyPI's onnxruntime-gpu (1.32, matching ort's api-31) with its CUDA 12
# and cuDNN 9 libraries findable (pip's nvidia-* wheels on LD_LIBRARY_PATH), the converted
# model (sift model install --llm, or copied), cargo (the example is built with
# --features cuda), and a Python with numpy, onnxruntime and tokenizers for the CPU reference.
# Fails (exit 1) when sift fell back to the CPU: the fallback notice appeared or the model
# reports device cpu.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ORT_DYLIB_PATH:?set ORT_DYLIB_PATH to the libonnxruntime.so of onnxruntime-gpu}"
[[ -f "$ORT_DYLIB_PATH" ]] || { echo "error: no file $ORT_DYLIB_PATH" >&2; exit 1; }
export ORT_DYLIB_PATH
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
DEVICE=cuda PROMPT_TOKENS="${PROMPT_TOKENS:-1000}" GEN_TOKENS="${GEN_TOKENS:-64}" \
    bash bench/llm-bench.sh 2>&1 | tee "$log"
if grep -q "CUDA is not available" "$log" || ! grep -q '"device": "cuda"' "$log"; then
    echo "RESULT: CUDA was NOT used (fell back to the CPU); see the notice above" >&2
    exit 1
fi
echo "RESULT: CUDA was used (no fallback notice; the model reports device cuda)."
echo "Note: MatMulNBits nodes the CUDA provider cannot run stay on the CPU; set"
echo "ORT_LOG_LEVEL / session logging to verbose to see node placement if tokens/s look CPU-bound."
