#!/usr/bin/env bash
# Runs docs/editors.md's Neovim agent snippet (snippets/nvim-agent.lua) in a real, headless
# Neovim against `sift lsp`, whose model is a scripted OpenAI-compatible endpoint on 127.0.0.1
# (plugin-vscode/e2e/fake-openai.mjs: an `edit` call, then a final text). Needs node.
#
#   bash tests/editors/nvim-agent.sh [SIFT_BIN]
#
# Exits 0 when every check passed, 1 otherwise, 77 when nvim or node is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
nvim="${NVIM:-nvim}"
bin="${1:-${SIFT_BIN:-}}"
if [ -z "$bin" ]; then
    for candidate in "$repo/target/debug/sift" "$repo/target/release/sift" "$(command -v sift || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then bin="$candidate"; break; fi
    done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "nvim-agent: no sift binary" >&2; exit 1; }
command -v "$nvim" >/dev/null || { echo "nvim-agent: skipped: no $nvim"; exit 77; }
command -v node >/dev/null || { echo "nvim-agent: skipped: no node for the scripted endpoint"; exit 77; }

work="$(mktemp -d)"
model_pid=""
cleanup() { [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/repo/.git"
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$work/bin/sift"
cat >"$work/repo/app.py" <<'PY'
def parse_config(path):
    """Reads the config file at path."""
    return {}
PY
script='{"tool":{"name":"edit","arguments":{"path":"app.py","old_text":"    return {}","new_text":"    return {\"path\": path}"}},"final":"Returned the path."}'
node "$repo/plugin-vscode/e2e/fake-openai.mjs" "$script" >"$work/model.log" 2>&1 &
model_pid=$!
for _ in $(seq 50); do grep -q listening "$work/model.log" && break; sleep 0.1; done
port="$(awk '/listening/ {print $2}' "$work/model.log")"
[ -n "$port" ] || { echo "nvim-agent: the scripted endpoint did not start: $(cat "$work/model.log")" >&2; exit 1; }

echo "nvim-agent: $("$nvim" --version | head -1), sift at $bin, model at 127.0.0.1:$port"
PATH="$work/bin:$PATH" XDG_CONFIG_HOME="$work/xdg" SIFT_SNIPPETS="$here/snippets" SIFT_E2E_ROOT="$work/repo" \
    SIFT_MODEL_BACKEND=openai SIFT_MODEL_BASE_URL="http://127.0.0.1:$port/v1" SIFT_MODEL_NAME=x \
    timeout 180 "$nvim" --headless --clean -c "luafile $here/nvim-agent.lua" </dev/null
