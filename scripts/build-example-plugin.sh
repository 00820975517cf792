#!/usr/bin/env bash
# Builds the example plugin (examples/plugins/banned-api) for wasm32-wasip2:
#
#   bash scripts/build-example-plugin.sh
#
# The component lands in examples/plugins/banned-api/target/wasm32-wasip2/release/banned_api.wasm
# (what bench/plugin-bench.sh loads). Needs the
# wasm32-wasip2 target (`rustup target add wasm32-wasip2`; installed here when rustup can) and
# the crates of the example's Cargo.lock (crates.io, once). Exit status 2 when the target cannot
# be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
manifest=examples/plugins/banned-api/Cargo.toml
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    if ! rustup target add wasm32-wasip2; then
        echo "error: the wasm32-wasip2 target is not installed and rustup could not add it" >&2
        exit 2
    fi
fi
# Its own target dir: the example is its own workspace, and CARGO_TARGET_DIR may point at sift's.
CARGO_TARGET_DIR=examples/plugins/banned-api/target \
    cargo build --locked --release --target wasm32-wasip2 --manifest-path "$manifest"
wasm=examples/plugins/banned-api/target/wasm32-wasip2/release/banned_api.wasm
ls -l "$wasm"
