#!/usr/bin/env bash
# Checks the Helix configuration of docs/editors.md (snippets/helix-languages.toml).
#
#   bash tests/editors/helix-check.sh [SIFT_BIN]
#
# Always: the TOML parses and has the shape Helix expects ([language-server.sift] with command
# and args; each [[language]] lists "sift" among its language-servers, by Helix's names).
# When `hx` is installed (not in Debian 12; see https://docs.helix-editor.com/install.html):
# also `hx --health LANG` with that file as the user's languages.toml must list sift and find the
# binary. Exits 0 when the checks that could run passed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
snippet="$here/snippets/helix-languages.toml"

python3 - "$snippet" <<'PY'
import sys, tomllib
path = sys.argv[1]
with open(path, "rb") as f:
    config = tomllib.load(f)
server = config["language-server"]["sift"]
assert server == {"command": "sift", "args": ["lsp"]}, server
helix_names = {"rust", "python", "javascript", "typescript", "tsx", "go", "java", "c", "cpp"}
names = set()
for language in config["language"]:
    name = language["name"]
    assert name in helix_names, f"{name} is not one of Helix's names {sorted(helix_names)}"
    assert "sift" in language["language-servers"], name
    names.add(name)
assert names == helix_names, f"missing: {sorted(helix_names - names)}"
print(f"ok   {path}: [language-server.sift] and {len(names)} languages use it")
PY

if ! command -v hx >/dev/null; then
    echo "helix-check: hx is not installed: only the TOML was checked (Helix itself untested)"
    exit 0
fi

bin="${1:-${SIFT_BIN:-}}"
if [ -z "$bin" ]; then
    for candidate in "$repo/target/debug/sift" "$repo/target/release/sift" "$(command -v sift || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then bin="$candidate"; break; fi
    done
fi
config="$(mktemp -d)"
trap 'rm -rf "$config"' EXIT
mkdir -p "$config/helix" "$config/bin"
cp "$snippet" "$config/helix/languages.toml"
[ -n "$bin" ] && ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$config/bin/sift"
status=0
for language in rust python c; do
    out="$(PATH="$config/bin:$PATH" XDG_CONFIG_HOME="$config" hx --health "$language" 2>&1 || true)"
    if grep -q "sift" <<<"$out" && ! grep -qi "sift.*not found" <<<"$out"; then
        echo "ok   hx --health $language lists sift"
    else
        echo "FAIL hx --health $language:"
        echo "$out"
        status=1
    fi
done
exit "$status"
