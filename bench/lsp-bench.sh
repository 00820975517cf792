#!/usr/bin/env bash
# lsp-bench.sh: a rerunnable benchmark of sift's language server (`sift lsp`) on Django.
#
#   bash bench/lsp-bench.sh
#
# What it does:
#   1. builds the release binary (`cargo build --release -p sift-lsp`), unless SIFT_BIN points
#      at a binary already (cargo waits for the build lock if another build is running);
#   2. uses the Django 5.1.4 corpus at bench/work/django (prepared by bench/index-bench.sh); when
#      it is missing, downloads the wheel itself into bench/work/lsp-corpus (its own folder, so
#      that it never races with index-bench.sh);
#   3. runs bench/lsp-bench.py, which copies the corpus to bench/work/lsp-django (recreated each
#      run, without .sift/, i.e. a cold start), drives `sift lsp` over stdio and measures: time to
#      the first search answer and to a complete index, "saved file searchable" latency,
#      workspace/symbol latency, resident memory, and a clean shutdown. It prints a Markdown table
#      (with the targets from the issue) and writes bench/work/lsp-results.md (+ .json); the
#      server's stderr goes to bench/work/lsp-server.log.
#
# A report, not a test: the numbers never fail it. It exits non-zero when the server crashes,
# stops answering (60 s per request) or does not exit with status 0 after shutdown + exit.
#
# Environment knobs:
#   SIFT_BIN=path        use this binary instead of building one
#   LSP_BENCH_CORPUS=dir use this unpacked Django instead of bench/work/django
#   LSP_BENCH_ARGS="..." extra arguments for lsp-bench.py (e.g. "--did-save --probes 40")

set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
command -v python3 >/dev/null 2>&1 || die "python3 is needed"

# --- 2. the corpus ------------------------------------------------------------------------------
corpus="${LSP_BENCH_CORPUS:-$WORK/django}"
if [[ ! -d "$corpus/django" ]]; then
    corpus="$WORK/lsp-corpus"
    if [[ ! -d "$corpus/django" ]]; then
        log "no corpus at $WORK/django: downloading the Django $DJANGO_VERSION wheel from PyPI"
        command -v unzip >/dev/null 2>&1 || die "unzip is needed (apt-get install -y unzip)"
        mkdir -p "$WORK/downloads"
        wheel="$(ls "$WORK"/downloads/[Dd]jango-"$DJANGO_VERSION"-*.whl 2>/dev/null | head -1 || true)"
        if [[ -z "$wheel" ]]; then
            python3 -m pip download --quiet --no-deps --only-binary :all: \
                "django==$DJANGO_VERSION" -d "$WORK/downloads"
            wheel="$(ls "$WORK"/downloads/[Dd]jango-"$DJANGO_VERSION"-*.whl | head -1)"
        fi
        rm -rf "$corpus.tmp"
        unzip -q "$wheel" -d "$corpus.tmp"
        mv "$corpus.tmp" "$corpus"
    fi
fi
log "corpus: $corpus"

# --- 3. measure ---------------------------------------------------------------------------------
read -r -a extra <<<"${LSP_BENCH_ARGS:-}"
exec python3 "$BENCH_DIR/lsp-bench.py" --sift "$SIFT_BIN" --corpus "$corpus" \
    --work "$WORK" --out "$WORK" "${extra[@]}"
