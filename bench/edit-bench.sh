#!/usr/bin/env bash
# The edit-application benchmark (see bench/edit_bench.py): real hunks from consecutive
# releases of Python packages (PyPI) and Rust crates (crates.io), applied through the agent's
# edit matcher and through GNU patch without line numbers, clean and perturbed.
# Usage: bash bench/edit-bench.sh [--json OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --locked -p sift-engine --example edit_apply
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p bench/work/edit
python3 bench/edit_bench.py "$target_dir/debug/examples/edit_apply" bench/work/edit "$@"
