#!/usr/bin/env bash
# The CUDA path of the embedding model, on a machine with an NVIDIA GPU, side by side with the
# same machine's CPU in one run.
#
#   ORT_DYLIB_PATH=/path/to/onnxruntime-gpu/capi/libonnxruntime.so.1.31.1 \
#   SIFT_BIN=target/release/sift bash bench/gpu-embed.sh
#
# Needs: onnxruntime-gpu's library (PyPI `onnxruntime-gpu`, CUDA 13 build; its folder also holds
# libonnxruntime_providers_cuda.so and _shared.so) and the CUDA libraries it links (cuBLAS,
# cuDNN 9, cuFFT, cuRAND, the CUDA runtime: the PyPI nvidia-* wheels, found through
# LD_LIBRARY_PATH; this script adds every nvidia/*/lib folder of python3's site-packages), and
# the transformer model (`sift model install`). Prints: whether CUDA was really used, the
# fallback notice when no GPU is visible, chunks/s for all of Django on CUDA (batch 32 and 256),
# recall on the eval sets from GPU-made vectors (compare with the CPU numbers in the README),
# CLI query latency, and django/db on CUDA against all CPU cores.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[[ -n "${ORT_DYLIB_PATH:-}" ]] || die "set ORT_DYLIB_PATH to onnxruntime-gpu's libonnxruntime.so"
"$SIFT_BIN" model install >&2
prepare_django
NV=$(python3 - <<'PY'
import glob, os, site
dirs = {os.path.dirname(f) for sp in site.getsitepackages()
        for f in glob.glob(os.path.join(sp, "nvidia", "**", "lib*.so*"), recursive=True)}
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$(dirname "$ORT_DYLIB_PATH"):$NV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
S=$SIFT_BIN
D="$WORK/gpu-django"
rm -rf "$D" && cp -r "$WORK/django" "$D" && rm -rf "$D/.sift"
command -v nvidia-smi >/dev/null && nvidia-smi -L
log "libraries the CUDA provider cannot find"
ldd "$(dirname "$ORT_DYLIB_PATH")/libonnxruntime_providers_cuda.so" | grep "not found" || echo "none"
log "model info --check on cuda"
SIFT_EMBED_MODEL=all-minilm-l6-v2 SIFT_EMBED_DEVICE=cuda "$S" model info --path "$D" --check 2>&1
log "fallback: cuda asked for, no GPU visible (expect a one-line notice, then cpu)"
CUDA_VISIBLE_DEVICES= SIFT_EMBED_MODEL=all-minilm-l6-v2 SIFT_EMBED_DEVICE=cuda "$S" model info --path "$D" --check 2>&1 | tail -2
"$S" index "$D" --no-embed --quiet >/dev/null
pass() { # root device batch label
    rm -rf "$1/.sift/vectors"
    printf '[embed]\nmodel = "all-minilm-l6-v2"\ndevice = "%s"\nbatch = %s\n' "$2" "$3" >"$1/.sift/config.toml"
    local t0 t1 out n
    t0=$(date +%s.%N)
    out=$("$S" index "$1" --quiet --json 2>"$WORK/gpu-err.txt")
    t1=$(date +%s.%N)
    n=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["embeddings"]["embedded"])' "$out")
    python3 -c "w=$t1-$t0; print(f'| $4 | $2 | $3 | {$n} | {w:.2f} s | {$n/w:.0f} |')"
    grep -i -E "notice|error" "$WORK/gpu-err.txt" | head -3
}
log "all of Django, all-MiniLM-L6-v2 on cuda"
echo "| corpus | device | batch | chunks | wall | chunks/s |"
echo "|---|---|---|---|---|---|"
pass "$D" cuda 32 django
pass "$D" cuda 256 django
log "recall from GPU-made vectors"
"$S" eval bench/eval/django-questions.jsonl --path "$D" 2>&1 | tail -4
"$S" eval bench/eval/django-fixes.jsonl --path "$D" 2>&1 | tail -4
log "CLI hybrid query, 5 runs (the query is embedded on the CPU when the vectors are complete)"
TIMEFORMAT='%R s'
for _ in 1 2 3 4 5; do
    { time "$S" search --no-refresh --path "$D" -k 5 "where do we stop other sites from framing our pages" >/dev/null 2>&1; } 2>&1
done
log "django/db: cuda against all $(nproc) CPU cores"
DB="$WORK/gpu-django-db"
rm -rf "$DB" && mkdir -p "$DB" && cp -r "$WORK/django/django/db" "$DB/"
"$S" index "$DB" --no-embed --quiet >/dev/null
pass "$DB" cuda 256 django/db
pass "$DB" cpu 32 django/db
