#!/usr/bin/env bash
# index-bench.sh: a rerunnable indexing + search benchmark for sift.
#
#   bash bench/index-bench.sh
#
# What it does, in order:
#   1. builds the release binary (`cargo build --release -p sift-lsp`), unless SIFT_BIN points
#      at a binary already;
#   2. makes sure ripgrep, GNU time (/usr/bin/time, for peak RSS) and unzip are installed
#      (apt-get, when run as root);
#   3. prepares the corpora under bench/work/ (git-ignored), skipping what is already there:
#        django  - the Django 5.1.4 wheel from PyPI, unzipped (~900 Python files plus locales);
#        vendor  - `cargo vendor` of a dummy project with ~30 popular dependencies
#                  (~400 crates, ~450 MB, all platforms' crates included, as cargo vendors them);
#   4. builds the parse-only ceiling (lsp/examples/parse_ceiling.rs), unless CEILING_BIN points at
#      one: tree-sitter parsing alone over the same files, so the report shows how close sift's
#      MB per CPU-second is to what parsing by itself allows;
#   5. runs bench/index_bench.py, which measures per corpus: cold lexical index (`--no-embed`;
#      wall, CPU, peak RSS, throughput, index size) beside the parse-only ceiling, no-op re-index,
#      re-index after changing one file, and the end-to-end latency of lexical `sift search` (with and
#      without --no-refresh) against `rg`; it prints the results side by side and writes
#      bench/work/results.md (+ results.json).
#
# It is a report, not a test: nothing is asserted about the numbers.
#
# Environment knobs:
#   SIFT_BIN=path      use this binary instead of building one
#   CEILING_BIN=path   use this parse_ceiling example binary instead of building one
#   SIFT_THREADS=N     passed through to sift (worker threads); shown in the report
#   BENCH_CORPORA="django vendor"  which corpora to run (default: both)
#   BENCH_RUNS=10      timed runs per query and tool      BENCH_WARMUP=2  warm-up runs per query
#   BENCH_REINDEX_RUNS=5  runs of each re-index scenario (the median is reported)
#   BENCH_RG_MODE=words|phrase  how a multi-word query is given to rg (default: words, i.e. an
#                      alternation of the words as fixed strings; phrase = the literal phrase)

set -euo pipefail

# shellcheck source=bench/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# --- 2. tools -----------------------------------------------------------------------------------
need_pkgs=()
command -v rg >/dev/null 2>&1 || need_pkgs+=(ripgrep)
[[ -x /usr/bin/time ]] || need_pkgs+=(time)
command -v unzip >/dev/null 2>&1 || need_pkgs+=(unzip)
if ((${#need_pkgs[@]})); then
    log "installing ${need_pkgs[*]} with apt-get"
    if [[ $EUID -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        die "missing tools: ${need_pkgs[*]}; install them (Debian: apt-get install -y ${need_pkgs[*]})"
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed"

# --- 3. corpora ---------------------------------------------------------------------------------
# Each corpus is built in a temporary folder and moved into place only when complete, so an
# interrupted run leaves nothing half-made behind, and a complete corpus is never rebuilt.

# prepare_django: in common.sh.

# The dependency list of the vendored project: popular crates, chosen so that `cargo vendor`
# lands at ~400 crates and ~450 MB (du -sb). bench/vendor-project.Cargo.lock pins the exact versions,
# so every run vendors the same tree; delete it to re-resolve against today's crates.io.
write_vendor_manifest() {
    cat >"$1/Cargo.toml" <<'EOF'
[package]
name = "sift-bench-vendor"
version = "0.0.0"
edition = "2021"
publish = false

# Not a member of the sift workspace above it.
[workspace]

[dependencies]
tokio = { version = "1", features = ["full"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
clap = { version = "4", features = ["derive"] }
regex = "1"
syn = { version = "2", features = ["full"] }
hyper = { version = "1", features = ["full"] }
axum = "0.8"
tonic = "0.12"
prost = "0.13"
rayon = "1"
diesel = { version = "2", features = ["postgres", "sqlite", "mysql"] }
sqlx = { version = "0.8", features = ["runtime-tokio", "postgres", "sqlite", "mysql"] }
reqwest = { version = "0.12", default-features = false, features = ["rustls-tls", "json"] }
tracing = "0.1"
tracing-subscriber = { version = "0.3", features = ["env-filter"] }
anyhow = "1"
thiserror = "2"
chrono = "0.4"
uuid = { version = "1", features = ["v4"] }
rand = "0.8"
itertools = "0.13"
crossbeam = "0.8"
parking_lot = "0.12"
dashmap = "6"
futures = "0.3"
nom = "7"
wasmtime = { version = "27", default-features = false, features = ["cranelift", "runtime", "std", "wat", "parallel-compilation"] }
proptest = "1"
EOF
}

prepare_vendor() {
    local dest="$WORK/vendor" project="$WORK/vendor-project"
    if [[ -d "$dest" ]]; then
        log "corpus vendor: present ($dest)"
        return
    fi
    log "corpus vendor: cargo vendor of $project (downloads ~100 MB of crates from crates.io)"
    mkdir -p "$project/src"
    write_vendor_manifest "$project"
    : >"$project/src/lib.rs"
    if [[ -f "$BENCH_DIR/vendor-project.Cargo.lock" ]]; then
        cp "$BENCH_DIR/vendor-project.Cargo.lock" "$project/Cargo.lock"
    fi
    rm -rf "$dest.tmp"
    # cargo vendor prints the source-replacement config on stdout (not needed here) and a line
    # per crate on stderr (kept in a log, shown when it fails).
    if ! (cd "$project" && cargo vendor --versioned-dirs "$dest.tmp" >/dev/null 2>"$WORK/vendor.log"); then
        tail -20 "$WORK/vendor.log" >&2
        die "cargo vendor failed (full log: $WORK/vendor.log)"
    fi
    mv "$dest.tmp" "$dest"
}

read -r -a corpora <<<"${BENCH_CORPORA:-django vendor}"
for c in "${corpora[@]}"; do
    case "$c" in
        django) prepare_django ;;
        vendor) prepare_vendor ;;
        *) die "unknown corpus '$c' in BENCH_CORPORA (known: django vendor)" ;;
    esac
done

for c in "${corpora[@]}"; do
    if [[ "$c" == vendor ]]; then
        printf 'corpus vendor: %s crates, %s MB\n' \
            "$(find "$WORK/vendor" -mindepth 1 -maxdepth 1 -type d ! -name .sift | wc -l)" \
            "$(( $(du -sb --exclude=.sift "$WORK/vendor" | cut -f1) / 1000000 ))" >&2
    fi
done

# --- 4. the parse-only ceiling ------------------------------------------------------------------
if [[ -n "${CEILING_BIN:-}" ]]; then
    [[ -x "$CEILING_BIN" ]] || die "CEILING_BIN=$CEILING_BIN is not an executable file"
else
    log "building the parse-only ceiling (cargo build --release -p sift-lsp --example parse_ceiling)"
    cargo build --release -p sift-lsp --example parse_ceiling \
        || die "the parse_ceiling build failed; fix it, or set CEILING_BIN to an existing binary"
    CEILING_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/parse_ceiling"
fi

# --- 5. measure ---------------------------------------------------------------------------------
log "measuring (${corpora[*]}); results go to $WORK/results.md"
args=()
for c in "${corpora[@]}"; do args+=(--corpus "$c=$WORK/$c"); done
exec python3 "$BENCH_DIR/index_bench.py" --sift "$SIFT_BIN" --ceiling "$CEILING_BIN" --out "$WORK" "${args[@]}"
