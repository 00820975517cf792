#!/usr/bin/env bash
# End-to-end check of the Emacs (eglot) configuration in docs/editors.md, headless.
#
#   bash tests/editors/emacs-eglot.sh [SIFT_BIN]
#
# SIFT_BIN defaults to target/debug/sift, else target/release/sift, else `sift` on PATH.
# Needs emacs (28+) and eglot: on Debian 12, `apt-get install emacs-nox elpa-eglot` (Emacs 29+
# ships eglot). Exits 0 when every check passed, 1 when one failed, 77 (skip) when emacs or eglot
# is missing and SIFT_REQUIRE_EMACS is not 1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

bin="${1:-${SIFT_BIN:-}}"
if [ -z "$bin" ]; then
    for candidate in "$repo/target/debug/sift" "$repo/target/release/sift" "$(command -v sift || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then bin="$candidate"; break; fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "emacs-eglot: no sift binary (build it: cargo build -p sift-lsp)" >&2
    exit 1
fi

skip() {
    if [ "${SIFT_REQUIRE_EMACS:-0}" = 1 ]; then
        echo "emacs-eglot: $1 (SIFT_REQUIRE_EMACS=1)" >&2
        exit 1
    fi
    echo "emacs-eglot: skipped: $1"
    exit 77
}
command -v emacs >/dev/null || skip "emacs is not installed (apt-get install emacs-nox elpa-eglot)"
emacs --batch -q --eval "(require 'eglot)" >/dev/null 2>&1 \
    || skip "eglot is not installed (apt-get install elpa-eglot)"

fixture="$(mktemp -d)"
trap 'rm -rf "$fixture"' EXIT
cat >"$fixture/app.py" <<'EOF'
"""A tiny app for the eglot end-to-end check."""


def parse_config(path):
    """Reads the config file at path."""
    with open(path) as f:
        return dict(line.split("=", 1) for line in f if "=" in line)


class Server:
    def start(self, config):
        return config.get("port", 8080)
EOF
printf '# Deployment checklist\n\nRestart the workers after a release.\n' >"$fixture/NOTES.md"
cat >"$fixture/util.c" <<'EOF'
int add_numbers(int a, int b) { return a + b; }
EOF

# The snippet runs plain `sift`: put the binary under test first on PATH under that name.
mkdir "$fixture/.bin"
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$fixture/.bin/sift"

echo "emacs-eglot: $(emacs --version | head -1), sift at $bin, fixture $fixture"
PATH="$fixture/.bin:$PATH" SIFT_BIN="$bin" SIFT_E2E_ROOT="$fixture" HOME="$fixture/.home" \
    timeout 180 emacs --batch -q -l "$here/emacs-eglot.el"
