#!/usr/bin/env bash
# Checks that docs/editors.md quotes every snippet in snippets/ verbatim (so what the editor tests
# run is what the page tells users to paste).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
docs="$(cd "$here/../.." && pwd)/docs/editors.md"
python3 - "$docs" "$here"/snippets/* <<'PY'
import sys
docs_path, snippets = sys.argv[1], sys.argv[2:]
docs = open(docs_path, encoding="utf-8").read()
failed = 0
for path in snippets:
    text = open(path, encoding="utf-8").read().rstrip("\n")
    if f"\n{text}\n```" in docs:
        print(f"ok   {path.rsplit('/', 1)[-1]} is quoted in docs/editors.md")
    else:
        print(f"FAIL {path.rsplit('/', 1)[-1]} is not quoted verbatim in docs/editors.md")
        failed += 1
print(f"docs snippets: {len(snippets) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
