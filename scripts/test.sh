#!/usr/bin/env bash
# The README's test command: sets up what the tests need and runs every test.
# Needs the Rust toolchain (cargo); everything else comes from crates.io, except Neovim for the
# editor end-to-end test, which is installed with apt-get when missing (as root).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> formatting"
cargo fmt --all -- --check

echo "==> building the sift binary the end-to-end tests drive"
cargo build --locked -p sift-lsp

echo "==> Neovim for the editor end-to-end test (tests/tests/neovim.rs)"
# Installed from the distribution when missing and we can (root with apt-get). Once nvim is
# available the test is required: SIFT_REQUIRE_NVIM=1 makes a missing nvim a failure instead
# of a skip.
if ! command -v nvim >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null \
            || echo "warning: installing neovim failed; the Neovim test will be skipped"
    else
        echo "warning: nvim missing and cannot be installed (not root, or no apt-get); the Neovim test will be skipped"
    fi
fi
if command -v nvim >/dev/null; then
    export SIFT_REQUIRE_NVIM=1
fi

echo "==> tests"
cargo test --locked --workspace
