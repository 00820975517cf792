#!/bin/sh
# Regenerates runtime/src/rules/builtin.rs from the files under runtime/rules/.
# Run from runtime/rules/: ./gen-builtin.sh
set -e
out=../src/review/builtin.rs
{
  echo '//! The built-in rule pack: every file under `runtime/rules/`, embedded in the binary.'
  echo '//! Regenerate this list with `runtime/rules/gen-builtin.sh`; a test checks that it matches'
  echo '//! the directory.'
  echo
  echo '/// `(path under runtime/rules/, file text)` for every built-in rule.'
  echo 'pub(crate) const BUILTIN_RULES: &[(&str, &str)] = &['
  for f in $(find . -name '*.toml' | sed 's|^\./||' | LC_ALL=C sort); do
    echo "    (\"$f\", include_str!(\"../../rules/$f\")),"
  done
  echo '];'
} > "$out"
rustfmt --edition 2024 "$out"
