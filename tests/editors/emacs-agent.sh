#!/usr/bin/env bash
# Runs the Emacs (eglot) agent lines of docs/editors.md in `emacs --batch` against `sift lsp`,
# whose model is a scripted OpenAI-compatible endpoint on 127.0.0.1
# (plugin-vscode/e2e/fake-openai.mjs). Needs node.
#
#   bash tests/editors/emacs-agent.sh [SIFT_BIN]
#
# Exits 0 when every check passed, 1 otherwise, 77 when Emacs, eglot or node is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${SIFT_BIN:-}}"
if [ -z "$bin" ]; then
    for candidate in "$repo/target/debug/sift" "$repo/target/release/sift"; do
        if [ -x "$candidate" ]; then bin="$candidate"; break; fi
    done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "emacs-agent: no sift binary" >&2; exit 1; }
command -v emacs >/dev/null || { echo "emacs-agent: skipped: no emacs"; exit 77; }
emacs --batch -q --eval "(require 'eglot)" >/dev/null 2>&1 || { echo "emacs-agent: skipped: no eglot"; exit 77; }
command -v node >/dev/null || { echo "emacs-agent: skipped: no node"; exit 77; }

work="$(mktemp -d)"
model_pid=""
cleanup() { [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/repo"
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$work/bin/sift"
printf 'def parse_config(path):\n    """Reads the config file at path."""\n    return {}\n' >"$work/repo/app.py"
script='{"tool":{"name":"edit","arguments":{"path":"app.py","old_text":"    return {}","new_text":"    return {\"path\": path}"}},"final":"Returned the path."}'
node "$repo/plugin-vscode/e2e/fake-openai.mjs" "$script" >"$work/model.log" 2>&1 &
model_pid=$!
for _ in $(seq 50); do grep -q listening "$work/model.log" && break; sleep 0.1; done
port="$(awk '/listening/ {print $2}' "$work/model.log")"
[ -n "$port" ] || { echo "emacs-agent: the scripted endpoint did not start" >&2; exit 1; }
echo "emacs-agent: $(emacs --version | head -1), sift at $bin"
cd "$work/repo"
PATH="$work/bin:$PATH" HOME="$work" XDG_CONFIG_HOME="$work/xdg" SIFT_E2E_ROOT="$work/repo" \
    SIFT_MODEL_BACKEND=openai SIFT_MODEL_BASE_URL="http://127.0.0.1:$port/v1" SIFT_MODEL_NAME=x \
    timeout 180 emacs --batch -q -l "$here/emacs-agent.el"
