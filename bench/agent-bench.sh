#!/usr/bin/env bash
# The agent's task suite per backend (see bench/agent_bench.py): "where is" questions over
# Django 5.1.4 through the real `sift agent`, on a scripted oracle endpoint (the pipeline), a
# scripted first-search-hit policy, the local Gemma 3 270M, and a real endpoint when
# SIFT_AGENT_BENCH_URL is set. SIFT_BIN=… skips the release build.
# Usage: bash bench/agent-bench.sh [--n N] [--backends oracle,first-hit,local] [--json OUT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
prepare_django
log "indexing Django (lexical and vectors)"
"$SIFT_BIN" index "$WORK/django" >/dev/null
python3 "$BENCH_DIR/agent_bench.py" "$SIFT_BIN" "$WORK/django" "$@"
