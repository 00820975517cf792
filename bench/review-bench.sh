#!/usr/bin/env bash
# The real-bug benchmark of `sift review` (the rule pack, no model).
#
# Corpus: consecutive patch releases of popular packages, from the registries only (PyPI wheels
# through pip, npm tarballs through `npm pack`, crates through `cargo vendor`). Patch releases are
# mostly bug fixes: each changed hunk of the forward diff (old → new) is counted as a fix, and the
# reversed diff (new → old) re-introduces the bugs. bench/review_bench.py builds one git repository
# per pair and direction under bench/work/review/ and measures:
#   - recall: fix hunks with a finding on the lines the reversed diff adds back;
#   - precision: findings on the reversed diffs whose flagged code the fix removed (the same
#     finding, by fingerprint, is absent from the fixed release), over all findings on them;
#   - false findings per clean diff: findings on the forward diffs (the fixes themselves);
#   - the time of a review of a 1,000-line diff on Django 5.1.4 (target: under 2 s).
#
# Usage: bench/review-bench.sh            (builds the release binary; SIFT_BIN=… to use another)
# Downloads are cached in bench/work/downloads (git-ignored); about 25 MB in all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

log "review benchmark: downloads in $WORK/downloads, repositories in $WORK/review"
python3 "$BENCH_DIR/review_bench.py" --sift "$SIFT_BIN" --work "$WORK" "$@"
