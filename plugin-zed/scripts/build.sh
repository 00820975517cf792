#!/usr/bin/env bash
# Builds and tests the Zed extension.
#
#   bash plugin-zed/scripts/build.sh
#
# 1. host: cargo fmt --check, clippy (-D warnings), unit tests;
# 2. wasm32-wasip2: the release build Zed loads (installs the target with rustup when it can;
#    prints a skip message and goes on when it cannot);
# 3. wasm smoke test: runs that component in Node with a fake Zed host (wasm-smoke/), against a
#    real sift binary. Needs node 18+ and npm (packages from the npm registry); skipped with a
#    message when they, the wasm build or a sift binary are missing.
#
# The crate is standalone (its own [workspace]), so its target dir is plugin-zed/target unless
# CARGO_TARGET_DIR says otherwise. SIFT_BIN picks the sift binary for the smoke test (default:
# target/debug/sift, else target/release/sift of the repository). SIFT_ZED_REQUIRE_WASM=1 turns
# the skips of steps 2 and 3 into failures.
set -euo pipefail
cd "$(dirname "$0")/.."
plugin="$(pwd)"
repo="$(cd .. && pwd)"
target_dir="${CARGO_TARGET_DIR:-$plugin/target}"
require="${SIFT_ZED_REQUIRE_WASM:-0}"

skip() {
    if [ "$require" = 1 ]; then
        echo "error: $1 (SIFT_ZED_REQUIRE_WASM=1)" >&2
        exit 1
    fi
    echo "SKIPPED: $1"
}

echo "==> plugin-zed: formatting"
cargo fmt --manifest-path "$plugin/Cargo.toml" -- --check

echo "==> plugin-zed: clippy (host)"
cargo clippy --locked --manifest-path "$plugin/Cargo.toml" --all-targets -- -D warnings

echo "==> plugin-zed: unit tests (host)"
cargo test --locked --manifest-path "$plugin/Cargo.toml"

echo "==> plugin-zed: wasm32-wasip2 build (what Zed loads)"
wasm=""
if ! rustc --print target-libdir --target wasm32-wasip2 >/dev/null 2>&1 \
    || [ ! -d "$(rustc --print target-libdir --target wasm32-wasip2 2>/dev/null)" ]; then
    if command -v rustup >/dev/null && rustup target add wasm32-wasip2; then
        :
    fi
fi
if [ -d "$(rustc --print target-libdir --target wasm32-wasip2 2>/dev/null || echo /nonexistent)" ]; then
    cargo build --locked --manifest-path "$plugin/Cargo.toml" --release --target wasm32-wasip2
    wasm="$target_dir/wasm32-wasip2/release/sift_zed.wasm"
    echo "built $wasm ($(wc -c <"$wasm") bytes)"
else
    skip "the wasm32-wasip2 target is not installed and \`rustup target add wasm32-wasip2\` failed or rustup is missing: the wasm build and its smoke test did not run"
fi

echo "==> plugin-zed: wasm smoke test (the component in Node, with a fake Zed host)"
sift="${SIFT_BIN:-}"
if [ -z "$sift" ]; then
    for candidate in "$repo/target/debug/sift" "$repo/target/release/sift"; do
        if [ -x "$candidate" ]; then sift="$candidate"; break; fi
    done
fi
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ -z "$wasm" ]; then
    skip "no wasm build: smoke test not run"
elif [ -z "$sift" ]; then
    skip "no sift binary (cargo build -p sift-lsp, or set SIFT_BIN): smoke test not run"
elif [ "$node_major" -lt 18 ] || ! command -v npm >/dev/null; then
    skip "node 18+ and npm are needed for the smoke test (found node major $node_major)"
elif ! npm ci --prefix "$plugin/wasm-smoke" --no-audit --no-fund --loglevel=error; then
    skip "npm ci in plugin-zed/wasm-smoke failed (no npm registry?): smoke test not run"
else
    node "$plugin/wasm-smoke/smoke.mjs" "$wasm" "$sift"
fi
echo "==> plugin-zed: done"
