#!/usr/bin/env bash
# The pull-request bot on Django 5.1.4, as a CI job runs it (bench/github_bench.py): a 5-file
# pull request reviewed and posted to a local stand-in of GitHub, with a cold runner (no .sift/)
# and with the workflow's cache (.sift/ built at the base commit), interleaved; the review
# alone too.
#
# Usage: bench/github-bench.sh [--runs N]   (builds the release binary; SIFT_BIN=… to use another)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

log "pull-request bot benchmark: repository in $WORK/github"
python3 "$BENCH_DIR/github_bench.py" --sift "$SIFT_BIN" --work "$WORK" "$@"
