#!/usr/bin/env bash
# Builds and tests the VS Code extension: npm ci, type-check and bundle, unit tests (node --test),
# the .vsix (plugin-vscode/sift.vsix); with SIFT_E2E_VSCODE=1 also the end-to-end test in a real
# VS Code (code-server from npm) driven in Debian's chromium (installed by e2e/setup.sh, once, into
# plugin-vscode/.e2e-cache). Exits non-zero on any failure.
#
# The unit tests include one against the real server (test/server.test.ts) and the settings
# drift check against `sift config schema --json` (test/settings-drift.test.ts): they use
# $SIFT_BIN, else the newer of target/release/sift and target/debug/sift; without one the server
# test is skipped and the drift check falls back to the README (SIFT_REQUIRE_BINARY=1 makes
# either a failure). Needs Node 20+ and the npm registry.
set -euo pipefail
if [ -n "${SIFT_BIN:-}" ]; then
    SIFT_BIN=$(realpath "$SIFT_BIN")
    export SIFT_BIN
fi
cd "$(dirname "$0")/.."

echo "==> plugin-vscode: npm ci"
# No install scripts are needed (esbuild's binary comes as an optional dependency; vsce's keytar
# is only for publishing).
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

echo "==> plugin-vscode: compile"
rm -rf out dist
npx --no-install tsc -p .
node scripts/bundle.mjs

echo "==> plugin-vscode: unit tests"
node --test out/test/*.test.js

echo "==> plugin-vscode: package"
rm -f sift.vsix
npx --no-install vsce package --no-dependencies --skip-license --allow-missing-repository --out sift.vsix </dev/null

if [ "${SIFT_E2E_VSCODE:-}" = 1 ]; then
    echo "==> plugin-vscode: end-to-end test in code-server + chromium"
    bash e2e/setup.sh
    SIFT_E2E_VSCODE=1 node --test e2e/vscode.e2e.mjs
else
    echo "==> plugin-vscode: end-to-end test skipped (set SIFT_E2E_VSCODE=1 to run it)"
fi
