#!/usr/bin/env bash
# Runs every editor check of docs/editors.md. A check whose editor is missing skips itself
# (exit 77) and does not fail the run.
#
#   bash tests/editors/run-all.sh [SIFT_BIN]
#
# NVIM picks the Neovim (default: nvim); SIFT_REQUIRE_EMACS=1 makes a missing Emacs a failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
status=0
for check in docs-snippets.sh helix-check.sh emacs-eglot.sh nvim-snippets.sh nvim-agent.sh emacs-agent.sh; do
    echo "=== $check"
    bash "$here/$check" "$@"
    rc=$?
    if [ "$rc" = 77 ]; then
        echo "(skipped)"
    elif [ "$rc" != 0 ]; then
        echo "=== $check FAILED (exit $rc)"
        status=1
    fi
done
exit "$status"
