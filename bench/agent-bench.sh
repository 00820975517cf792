#!/usr/bin/env bash
# The agent's task suite per backend (see bench/agent_bench.py): "where is" questions over
# Django 5.1.4 through the real `sift agent`, on a scripted oracle endpoint (the pipeline), a
# scripted first-search-hit policy, the local Gemma 3 270M, and a real endpoint when
# SIFT_AGENT_BENCH_URL is set. SIFT_BIN=… skips the release build.
# --suite reimplement: functions more-itertools added in real releases, re-implemented by the
# agent and checked by the project's own tests (bench/eval/reimplement-tasks.jsonl; the
# releases come from PyPI with pip into bench/work/reimplement).
# Usage: bash bench/agent-bench.sh [--n N] [--backends oracle,first-hit,local] [--json OUT]
#        bash bench/agent-bench.sh --suite reimplement [--n N] [--ids a,b] [--split S]
#             [--backends oracle,local] [--json OUT]
set -euo pipefail
source "$(dirname "$0")/common.sh"
if [[ " $* " == *" --suite reimplement "* ]]; then
    log "re-implementation tasks: the more-itertools releases they name (PyPI sdists)"
    python3 "$BENCH_DIR/eval/build_reimplement.py" --work "$WORK/reimplement" --trees-only >/dev/null
    python3 "$BENCH_DIR/agent_bench.py" "$SIFT_BIN" "$WORK/reimplement/src" "$@"
    exit
fi
prepare_django
log "indexing Django (lexical and vectors)"
"$SIFT_BIN" index "$WORK/django" >/dev/null
python3 "$BENCH_DIR/agent_bench.py" "$SIFT_BIN" "$WORK/django" "$@"
