#!/usr/bin/env bash
# Runs each Neovim snippet of docs/editors.md in a real, headless Neovim.
#
#   bash tests/editors/nvim-snippets.sh [SIFT_BIN]
#
# NVIM (default: nvim on PATH) picks the Neovim to use. Snippets the Neovim is too old for are
# skipped: nvim-0.11.lua needs vim.lsp.config (0.11+), nvim-0.8.lua needs vim.lsp.start (0.8+),
# nvim-0.7.lua runs on any. nvim-lspconfig.lua needs the nvim-lspconfig plugin and is not run.
# Exits 0 when every snippet run passed, 1 otherwise, 77 when no nvim is found.
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
[ -n "$bin" ] && [ -x "$bin" ] || { echo "nvim-snippets: no sift binary" >&2; exit 1; }
command -v "$nvim" >/dev/null || { echo "nvim-snippets: skipped: no $nvim"; exit 77; }

# The snippets run plain `sift`: put the binary under test first on PATH under that name.
bindir="$(mktemp -d)"
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$bindir/sift"

version="$("$nvim" --version | head -1)"
echo "nvim-snippets: $version, sift at $bin"
has() { "$nvim" --headless --clean -c "lua io.stdout:write(($1) and 'yes' or 'no')" -c 'qa!' 2>/dev/null; }

status=0
for snippet in nvim-0.11.lua nvim-0.8.lua nvim-0.7.lua; do
    case "$snippet" in
        nvim-0.11.lua) need="vim.lsp.config ~= nil and vim.lsp.enable ~= nil" ;;
        nvim-0.8.lua) need="vim.lsp.start ~= nil and vim.fs ~= nil" ;;
        *) need="true" ;;
    esac
    if [ "$(has "$need")" != yes ]; then
        echo "--- $snippet: skipped ($version is too old for it)"
        continue
    fi
    fixture="$(mktemp -d)"
    mkdir "$fixture/.git"   # a root marker, as in a real checkout
    cat >"$fixture/app.py" <<'PY'
def parse_config(path):
    """Reads the config file at path."""
    return {}
PY
    echo 'int add_numbers(int a, int b) { return a + b; }' >"$fixture/util.c"
    echo "--- $snippet"
    if PATH="$bindir:$PATH" SIFT_SNIPPET="$here/snippets/$snippet" SIFT_E2E_ROOT="$fixture" \
        timeout 120 "$nvim" --headless --clean -c "luafile $here/nvim-snippet.lua" </dev/null; then
        :
    else
        status=1
    fi
    echo
    rm -rf "$fixture"
done
rm -rf "$bindir"
exit "$status"
