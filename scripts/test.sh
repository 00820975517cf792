#!/usr/bin/env bash
# The README's test command: sets up what the tests need and runs every test.
# Needs only the Rust toolchain (cargo); everything else comes from crates.io.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> formatting"
cargo fmt --all -- --check

echo "==> building the sift binary the end-to-end tests drive"
cargo build --locked -p sift-lsp

echo "==> tests"
cargo test --locked --workspace
