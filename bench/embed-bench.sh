#!/usr/bin/env bash
# Embedding throughput and query latency, side by side in one run, on the Django source.
#
#   bash bench/embed-bench.sh            (SIFT_BIN=path to skip the release build)
#
# 1. The default (static) model embeds the whole Django corpus: wall time, CPU time, chunks per
#    CPU-second (from a lexical index built first with --no-embed, so only embedding is timed).
# 2. The naive baseline, all-MiniLM-L6-v2 through onnxruntime (int8, 128 tokens, batches of
#    32), embeds a slice of the same corpus (django/db: a full pass takes 10+ minutes here);
#    chunks per CPU-second of both are printed with their ratio.
# 3. Query latency: `sift search` (process start, model load, query embedding, search) in
#    lexical and hybrid mode, with hyperfine when installed.
# Results: bench/work/embed-results.md. Needs the models (`sift model install`).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v /usr/bin/time >/dev/null || die "GNU time is needed (apt-get install time)"
"$SIFT_BIN" model install >&2
prepare_django

corpus="$WORK/embed-django"
slice="$WORK/embed-django-db"
rm -rf "$corpus" "$slice"
cp -r "$WORK/django" "$corpus"
mkdir -p "$slice" && cp -r "$WORK/django/django/db" "$slice/db"

# Time one embedding pass: prints "wall_s cpu_s chunks".
embed_pass() {
    local root="$1" model="$2"
    "$SIFT_BIN" index "$root" --no-embed --quiet >/dev/null
    rm -rf "$root/.sift/vectors"
    local out
    out=$( { SIFT_EMBED_MODEL="$model" /usr/bin/time -f 'TIME %e %U %S' "$SIFT_BIN" index "$root" --quiet --json; } 2>&1 )
    local t chunks
    t=$(grep '^TIME' <<<"$out")
    chunks=$(grep '^{' <<<"$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["embeddings"]["embedded"])')
    awk -v t="$t" -v c="$chunks" 'BEGIN { split(t, a, " "); printf "%.2f %.2f %d\n", a[2], a[3] + a[4], c }'
}

log "static model, whole Django"
read -r s_wall s_cpu s_chunks < <(embed_pass "$corpus" all-minilm-l6-v2-static)
log "static model, django/db slice"
read -r d_wall d_cpu d_chunks < <(embed_pass "$slice" all-minilm-l6-v2-static)
log "baseline all-MiniLM-L6-v2 (onnxruntime), django/db slice"
read -r t_wall t_cpu t_chunks < <(embed_pass "$slice" all-minilm-l6-v2)

rate() { awk -v c="$1" -v s="$2" 'BEGIN { printf "%.0f", c / (s > 0 ? s : 1e-9) }'; }
static_rate=$(rate "$d_chunks" "$d_cpu")
naive_rate=$(rate "$t_chunks" "$t_cpu")
ratio=$(awk -v a="$static_rate" -v b="$naive_rate" 'BEGIN { printf "%.0f", a / b }')

latency=""
if command -v hyperfine >/dev/null; then
    log "query latency (hyperfine)"
    "$SIFT_BIN" index "$corpus" --quiet >/dev/null
    q="where do we stop other sites from framing our pages"
    hyperfine -N --warmup 3 --runs 30 --export-json "$WORK/embed-latency.json" \
        "$SIFT_BIN search --no-refresh --path $corpus --mode lexical -k 10 '$q'" \
        "$SIFT_BIN search --no-refresh --path $corpus --mode hybrid -k 10 '$q'" >&2
    latency=$(python3 - "$WORK/embed-latency.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for x in r:
    mode = "hybrid" if "hybrid" in x["command"] else "lexical"
    print(f"| `sift search --mode {mode}` (CLI, process start included) | {x['median']*1000:.0f} ms median, {x['mean']*1000:.0f} ms mean |")
PY
)
fi

{
    echo "# Embedding benchmark ($(date -u +%F), $(nproc) cores, $("$SIFT_BIN" --version))"
    echo
    echo "| what | chunks | wall | CPU | chunks per CPU-second |"
    echo "|---|---|---|---|---|"
    echo "| static model (default), all of Django $DJANGO_VERSION | $s_chunks | ${s_wall} s | ${s_cpu} s | $(rate "$s_chunks" "$s_cpu") |"
    echo "| static model, django/db | $d_chunks | ${d_wall} s | ${d_cpu} s | $static_rate |"
    echo "| all-MiniLM-L6-v2 via onnxruntime (naive baseline), django/db | $t_chunks | ${t_wall} s | ${t_cpu} s | $naive_rate |"
    echo
    echo "Static model: ${ratio}x the chunks per CPU-second of the baseline."
    if [[ -n "$latency" ]]; then
        echo
        echo "| query | latency |"
        echo "|---|---|"
        echo "$latency"
    fi
} | tee "$WORK/embed-results.md"
