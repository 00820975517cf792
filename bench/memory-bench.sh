#!/usr/bin/env bash
# What memory notes cost on Django 5.1.4 (the PyPI wheel, as scripts/test.sh fetches it):
# 1,000 notes on a copy of the tree; an incremental update of 10 cited files alone and with the
# notes' check, side by side in one run (ratio of medians); loading and checking all notes;
# finding a hover's notes; and `sift memory list` as a whole process against `sift status`
# (both open the index; hyperfine when installed).
#
#   bash bench/memory-bench.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=dev; flag=""; bin=target/debug/sift
if [ "${1:-}" = --release ]; then profile=release; flag=--release; bin=target/release/sift; fi
if [ ! -d bench/work/django/django ]; then
    mkdir -p bench/work/downloads
    python3 -m pip download --quiet --no-deps --only-binary :all: django==5.1.4 -d bench/work/downloads
    python3 -m zipfile -e bench/work/downloads/[Dd]jango-5.1.4-py3-none-any.whl bench/work/django.tmp
    mv bench/work/django.tmp bench/work/django
fi
copy=bench/work/django-memory
rm -rf "$copy" && cp -r bench/work/django "$copy"
echo "==> $profile build"
# One build (one feature resolution) for the binary and the example.
cargo build $flag -p sift-lsp -p sift-engine --bin sift --example memory_bench
"$(dirname "$bin")/examples/memory_bench" "$copy" 1000 7
echo "==> sift memory list (1,000 notes) against sift status, whole processes"
if command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 2 --runs 10 "$bin status --path $copy" "$bin memory list --path $copy"
else
    for cmd in "status" "memory list"; do
        start=$(date +%s%N); for _ in 1 2 3 4 5; do $bin $cmd --path "$copy" >/dev/null 2>&1; done
        echo "$cmd: $(( ($(date +%s%N) - start) / 5000000 )) ms (mean of 5)"
    done
fi
