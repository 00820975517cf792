#!/usr/bin/env bash
# `sift mcp` on Django 5.1.4 (the PyPI wheel): the `search` tool's latency as a real MCP client
# sees it (the MCP Python SDK over stdio), p50/p95 over 30 queries x 3 rounds, side by side with
# `rg -l -i` over the same tree in the same run; and the tool list's size in tokens.
#
#   bash bench/mcp-bench.sh            (builds the release binary; SIFT_BIN=... to skip that)
# Needs the MCP Python SDK: scripts/test.sh installs it into target/mcp-client; without it this
# script installs it there the same way. ripgrep: apt-get install ripgrep.
set -euo pipefail
source "$(dirname "$0")/common.sh"
prepare_django
client="$ROOT/target/mcp-client"
if [[ ! -x "$client/python" ]]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --target "$client/lib" 'mcp==2.3.0'
    printf '#!/bin/sh\nPYTHONPATH="%s/lib${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$client" >"$client/python"
    chmod +x "$client/python"
fi
copy="$WORK/django-mcp"
rm -rf "$copy" && cp -r "$WORK/django" "$copy"
log "indexing the copy once (sift index), so the server starts on a ready index"
"$SIFT_BIN" index "$copy" --quiet
log "measuring"
"$client/python" "$BENCH_DIR/mcp_bench.py" "$SIFT_BIN" "$copy" 3
