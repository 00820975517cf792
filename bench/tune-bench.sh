#!/usr/bin/env bash
# `sift model tune` on Django, side by side with the base static model and the transformer, in
# one run: every Django eval set per split (tune on `tuning`, report `held-out`; no question
# is trained on), the tune's wall time and peak RSS.
#
#   bash bench/tune-bench.sh            (SIFT_BIN=path to skip the release build)
#
# Corpus: Django 5.1.4 (the wheel from PyPI, bench/work/django, copied to bench/work/tune-django).
# The wheel has no git history: the tune learns from the transformer's vectors of the chunks
# and from the docstrings and comments (the history's part is tested in tests/tests/tune.rs).
# The transformer's pass over Django is the slow part (4 minutes on two quiet cores; cached, so
# a rerun embeds nothing). Results: bench/work/tune-{base,tuned,transformer}.txt and
# bench/work/tune-run.txt (the tune's own report and /usr/bin/time's). Needs `sift model install`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$SIFT_BIN" model install >&2
prepare_django
root="$WORK/tune-django"
if [[ ! -d "$root" ]]; then
    cp -r "$WORK/django" "$root.tmp" && mv "$root.tmp" "$root"
fi
sets=("$BENCH_DIR"/eval/django-*.jsonl)
"$SIFT_BIN" model tune --reset --path "$root" >&2
log "indexing with the default configuration (the static model, then the transformer)"
env -u SIFT_EMBED_MODEL -u SIFT_EMBED_UPGRADE "$SIFT_BIN" index -q "$root" >&2
log "the base static model"
SIFT_EMBED_MODEL=all-minilm-l6-v2-static SIFT_EMBED_UPGRADE=none \
    "$SIFT_BIN" eval --path "$root" --no-refresh "${sets[@]}" | tee "$WORK/tune-base.txt"
log "the transformer"
SIFT_EMBED_MODEL=all-minilm-l6-v2 SIFT_EMBED_UPGRADE=none \
    "$SIFT_BIN" eval --path "$root" --no-refresh "${sets[@]}" | tee "$WORK/tune-transformer.txt"
log "sift model tune"
/usr/bin/time -v "$SIFT_BIN" model tune --path "$root" 2>&1 | tee "$WORK/tune-run.txt" >&2
log "the tuned static model"
env -u SIFT_EMBED_MODEL SIFT_EMBED_UPGRADE=none "$SIFT_BIN" index -q "$root" >&2
env -u SIFT_EMBED_MODEL SIFT_EMBED_UPGRADE=none \
    "$SIFT_BIN" eval --path "$root" --no-refresh "${sets[@]}" | tee "$WORK/tune-tuned.txt"
grep -E "Elapsed|Maximum resident" "$WORK/tune-run.txt" >&2
