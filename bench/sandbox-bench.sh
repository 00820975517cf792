#!/usr/bin/env bash
# The sandbox's start-up overhead: `true` unsandboxed against `true` in the sandbox, as the
# agent pays it (the library, in process: runtime/examples/sandbox_overhead.rs) and as a user of
# `sift sandbox` pays it (a whole sift process), with the ratio of the medians.
#
#   bash bench/sandbox-bench.sh [RUNS]     (PROFILE=dev for a debug build; SIFT_BIN to skip
#                                           the release build of the binary)
#
# The in-process numbers are measured on an empty workspace and, when bench/work/django exists
# (bench/index-bench.sh or embed-bench.sh make it), on Django's 2,400 files, since every run
# walks the workspace for secret files to hide. Results: bench/work/sandbox-results.md.
# Linux only; the walls this machine offers are printed first (sift doctor).
set -euo pipefail
RUNS="${1:-200}"
PROFILE="${PROFILE:-release}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WORK="bench/work"
mkdir -p "$WORK"
out="$WORK/sandbox-results.md"

profile_flag=(--release)
[[ "$PROFILE" == dev ]] && profile_flag=()
target="${CARGO_TARGET_DIR:-target}"
dir=release
[[ "$PROFILE" == dev ]] && dir=debug

if [[ -z "${SIFT_BIN:-}" ]]; then
    cargo build "${profile_flag[@]}" -p sift-lsp >&2
    SIFT_BIN="$target/$dir/sift"
fi
cargo build "${profile_flag[@]}" -p sift-runtime --example sandbox_overhead >&2
example="$target/$dir/examples/sandbox_overhead"

{
    echo "# Sandbox overhead ($(date -u +%Y-%m-%dT%H:%MZ), $PROFILE build, $(nproc) cores)"
    echo
    echo '```'
    "$SIFT_BIN" doctor
    echo
    "$example" "$RUNS"
    if [[ -d "$WORK/django" ]]; then
        echo
        "$example" "$RUNS" "$WORK/django"
    fi
    echo
    # A whole `sift sandbox` process against a whole `true` process.
    ws="$(mktemp -d)"
    mkdir "$ws/.git"
    median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    time_ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
    n=$(( RUNS < 50 ? RUNS : 50 ))
    plain=$(for _ in $(seq "$n"); do time_ms "$(command -v true)"; done | median)
    boxed=$(for _ in $(seq "$n"); do time_ms "$SIFT_BIN" sandbox --path "$ws" -- true; done | median)
    rm -rf "$ws"
    echo "process: /bin/true median ${plain} us; sift sandbox -- true median ${boxed} us; ratio $(awk "BEGIN {printf \"%.0f\", $boxed / $plain}")x ($n runs each)"
    echo '```'
} | tee "$out"
echo "written to $out" >&2
