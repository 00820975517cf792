#!/usr/bin/env bash
# ab-bench.sh: this checkout's sift against another commit's, side by side on Django 5.1.4
# (cold index, CLI search, in-server search, peak memory), runs interleaved; see ab_bench.py.
#
#   BASE_REV=HEAD~3 bash bench/ab-bench.sh      # build that commit's release binary and compare
#   BASE_BIN=/path/to/old/sift bash bench/ab-bench.sh
#
# Knobs: SIFT_BIN (the binary to compare; default: a release build of this checkout),
# BASE_REV / BASE_BIN (the baseline; BASE_REV is built in bench/work/base-src with its own
# target folder bench/work/base-target), AB_RUNS (default 5).

set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[[ -x /usr/bin/time ]] || die "GNU time is needed (apt-get install -y time)"
prepare_django

if [[ -z "${BASE_BIN:-}" ]]; then
    rev="${BASE_REV:?set BASE_REV (a commit) or BASE_BIN (a binary) for the baseline}"
    src="$WORK/base-src"
    log "building the baseline $rev in $src"
    if [[ -d "$src" ]]; then
        git -C "$src" checkout --quiet --detach "$rev"
    else
        git worktree add --detach "$src" "$rev"
    fi
    (cd "$src" && CARGO_TARGET_DIR="$WORK/base-target" cargo build --release --locked -p sift-lsp)
    BASE_BIN="$WORK/base-target/release/sift"
fi
python3 "$BENCH_DIR/ab_bench.py" --a "$BASE_BIN" --b "$SIFT_BIN" --corpus "$WORK/django" \
    --runs "${AB_RUNS:-5}"
