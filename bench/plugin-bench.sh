#!/usr/bin/env bash
# The plugin host's costs: compile vs. load from the code cache, the per-call overhead of an
# empty check (fresh instance + call), and the example plugin over a 1,000-line diff.
#
#   bash bench/plugin-bench.sh            # builds the example plugin first when it can
#   PROFILE=dev bash bench/plugin-bench.sh  # the dev profile (dependencies at opt-level 2)
#
# Prints the machine (CPU, cores) with the numbers; docs/plugins.md keeps the last run's.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${PROFILE:-release}"
wasm=examples/plugins/banned-api/target/wasm32-wasip2/release/banned_api.wasm
if [ ! -f "$wasm" ]; then
    bash scripts/build-example-plugin.sh || echo "note: no example plugin; only the empty check is measured"
fi
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(uname -sr)"
echo "profile: $profile"
args=()
[ -f "$wasm" ] && args=("$wasm")
if [ "$profile" = release ]; then
    cargo run --locked --release -q -p sift-plugins --example plugin_bench -- "${args[@]}"
else
    cargo run --locked -q -p sift-plugins --example plugin_bench -- "${args[@]}"
fi
