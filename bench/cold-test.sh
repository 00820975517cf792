#!/usr/bin/env bash
# The cold test command, side by side: each revision is cloned fresh from this repository and
# `bash scripts/test.sh` runs in the clone with an empty target/ (the package registries' download
# caches and the installed models are this machine's, shared by every run). Runs one after the
# other, never at once, and prints each run's wall time and the ratio of the last to the first.
#
#   bash bench/cold-test.sh REV_A REV_B [REV_A REV_B ...]
#
# About 25 minutes a run on a 2-core machine. Keep the machine otherwise idle.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash bench/cold-test.sh REV_A REV_B [...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
work=${COLD_WORK:-$(mktemp -d)}
results=$work/results.tsv
: > "$results"
for rev in "$@"; do
  dir=$work/clone
  rm -rf "$dir"
  git clone -q "$here" "$dir"
  git -C "$dir" checkout -q "$rev"
  start=$(date +%s.%N)
  rc=0
  (cd "$dir" && bash scripts/test.sh > "$work/$rev.log" 2>&1) || rc=$?
  end=$(date +%s.%N)
  seconds=$(echo "$end - $start" | bc)
  printf '%s\t%s\t%s\n' "$rev" "$rc" "$seconds" | tee -a "$results"
  rm -rf "$dir"
done
awk -F'\t' 'NR==1 {a=$3} {last=$3} END {printf "last/first: %.3f\n", last/a}' "$results"
echo "logs: $work"
