#!/usr/bin/env bash
# Search quality on every eval set, per split, for both embedding models, in one run.
#
#   bash bench/quality-bench.sh            (SIFT_BIN=path to skip the release build;
#                                           MODELS="static" to skip the others;
#                                           EVAL_ARGS="--alpha 0.4" to try a fusion)
#
# Corpora: Django 5.1.4 (the wheel from PyPI, bench/work/django, copied to
# bench/work/quality-django) and tantivy 0.27.0 (the crate from crates.io as cargo unpacks it,
# ~/.cargo/registry/src/*/tantivy-0.27.0, which `cargo fetch` in this workspace brings; copied
# to bench/work/quality-tantivy). Each is indexed and embedded with the static default and with
# all-MiniLM-L6-v2 (the transformer pass over Django takes 4 minutes on two quiet cores, 20 on
# busy ones; the vectors are cached, so a rerun embeds nothing), then `sift eval` prints
# lexical, semantic and hybrid side by side per set and split. `static` and `transformer` are
# one model each (the progressive upgrade turned off); `default` is sift's default
# configuration (the static model, then the transformer over all but translation catalogs).
# Tune on `tuning`; report `held-out`. Results: bench/work/quality-<model>-<corpus>.txt.
# Needs `sift model install`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$SIFT_BIN" model install >&2
prepare_django

crate="$(ls -d "$HOME"/.cargo/registry/src/*/tantivy-0.27.0 2>/dev/null | head -1 || true)"
if [[ -z "$crate" ]]; then
    (cd "$ROOT" && cargo fetch >&2)
    crate="$(ls -d "$HOME"/.cargo/registry/src/*/tantivy-0.27.0 | head -1)"
fi
for c in django tantivy; do
    dest="$WORK/quality-$c"
    if [[ ! -d "$dest" ]]; then
        src="$WORK/django"; [[ $c == tantivy ]] && src="$crate"
        cp -r "$src" "$dest.tmp" && mv "$dest.tmp" "$dest"
    fi
done

EVAL="$BENCH_DIR/eval"
DJANGO_SETS=("$EVAL"/django-*.jsonl)
TANTIVY_SETS=("$EVAL"/tantivy-*.jsonl)
for model in ${MODELS:-static transformer default}; do
    case $model in
        static) env=(SIFT_EMBED_MODEL=all-minilm-l6-v2-static SIFT_EMBED_UPGRADE=none) ;;
        transformer) env=(SIFT_EMBED_MODEL=all-minilm-l6-v2 SIFT_EMBED_UPGRADE=none) ;;
        default) env=(-u SIFT_EMBED_MODEL -u SIFT_EMBED_UPGRADE) ;;
        *) die "MODELS: static, transformer or default, not $model" ;;
    esac
    for c in django tantivy; do
        root="$WORK/quality-$c"
        log "$model on $c: indexing and embedding"
        env "${env[@]}" "$SIFT_BIN" index -q "$root" >&2
        sets=("${DJANGO_SETS[@]}"); [[ $c == tantivy ]] && sets=("${TANTIVY_SETS[@]}")
        # shellcheck disable=SC2086  # EVAL_ARGS: words on purpose
        env "${env[@]}" "$SIFT_BIN" eval --path "$root" --no-refresh ${EVAL_ARGS:-} "${sets[@]}" \
            | tee "$WORK/quality-$model-$c.txt"
    done
done
