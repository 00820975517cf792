# Shared by the bench scripts: paths, messages, and the sift binary to measure.
# Sourced, not run. Sets BENCH_DIR, ROOT, WORK, DJANGO_VERSION and SIFT_BIN; cds to ROOT.

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
WORK="$BENCH_DIR/work"
DJANGO_VERSION="5.1.4"

log() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

mkdir -p "$WORK"
cd "$ROOT"

# The binary: SIFT_BIN when given, else a fresh release build.
if [[ -n "${SIFT_BIN:-}" ]]; then
    [[ -x "$SIFT_BIN" ]] || die "SIFT_BIN=$SIFT_BIN is not an executable file"
    SIFT_BIN="$(cd "$(dirname "$SIFT_BIN")" && pwd)/$(basename "$SIFT_BIN")"
    log "using SIFT_BIN=$SIFT_BIN (not building)"
else
    log "building the release binary (cargo build --release -p sift-lsp; can take 10+ minutes)"
    cargo build --release -p sift-lsp \
        || die "the release build failed; fix it, or set SIFT_BIN to an existing binary"
    SIFT_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/sift"
    [[ -x "$SIFT_BIN" ]] || die "built, but no binary at $SIFT_BIN"
fi
"$SIFT_BIN" --version >&2

# The Django corpus (bench/work/django): the Django wheel from PyPI, unzipped. Built in a
# temporary folder and moved into place only when complete.
prepare_django() {
    local dest="$WORK/django"
    if [[ -d "$dest" ]]; then
        log "corpus django: present ($dest)"
        return
    fi
    log "corpus django: downloading the Django $DJANGO_VERSION wheel from PyPI"
    mkdir -p "$WORK/downloads"
    local wheel="$WORK/downloads/Django-$DJANGO_VERSION-py3-none-any.whl"
    if [[ ! -f "$wheel" ]]; then
        python3 -m pip download --quiet --no-deps --only-binary :all: \
            "django==$DJANGO_VERSION" -d "$WORK/downloads"
    fi
    [[ -f "$wheel" ]] || wheel="$(ls "$WORK"/downloads/[Dd]jango-"$DJANGO_VERSION"-*.whl | head -1)"
    rm -rf "$dest.tmp"
    unzip -q "$wheel" -d "$dest.tmp"   # a wheel is a zip file
    mv "$dest.tmp" "$dest"
}
