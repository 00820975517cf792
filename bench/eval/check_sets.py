#!/usr/bin/env python3
"""Sanity checks for the sift eval sets in this directory.

For every line of every *.jsonl set: the record parses, has "q" and a non-empty
"gold" list, every gold file exists in the corpus tree, and every "evidence"
entry ("path::substring") names a gold file that really contains the substring.
For the identifier-free question set it also lists words of a question that
occur in its gold paths (a hint of lexical leakage, not an error).

Usage: python3 bench/eval/check_sets.py [--corpus bench/work/django]
"""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "work", "django"))
    crates = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/tantivy-0.27.0")))
    ap.add_argument("--tantivy-corpus", default=crates[0] if crates else None,
                    help="tantivy 0.27.0's source, for the tantivy-* sets")
    args = ap.parse_args()
    bad = 0
    for path in sorted(glob.glob(os.path.join(HERE, "*.jsonl"))):
        corpus = args.corpus
        if os.path.basename(path).startswith("tantivy-"):
            corpus = args.tantivy_corpus
            if not corpus:
                print(f"{os.path.basename(path)}: skipped (no tantivy-0.27.0 source; --tantivy-corpus)")
                continue
        n = 0
        ids = set()
        for lineno, line in enumerate(open(path), 1):
            if not line.strip():
                continue
            n += 1
            r = json.loads(line)
            where = f"{os.path.basename(path)}:{lineno}"
            if not r.get("q") or not r.get("gold"):
                print(f"{where}: missing q or gold"); bad += 1
            if r.get("split") not in (None, "tuning", "held-out"):
                print(f"{where}: bad split {r.get('split')!r}"); bad += 1
            if r.get("id") in ids:
                print(f"{where}: duplicate id {r.get('id')}"); bad += 1
            ids.add(r.get("id"))
            for g in r["gold"]:
                if not os.path.isfile(os.path.join(corpus, g)):
                    print(f"{where}: gold file missing from corpus: {g}"); bad += 1
            for ev in r.get("evidence", []):
                f, _, needle = ev.partition("::")
                if f not in r["gold"]:
                    print(f"{where}: evidence file not in gold: {f}"); bad += 1
                    continue
                p = os.path.join(corpus, f)
                if not os.path.isfile(p) or needle not in open(p, encoding="utf-8", errors="replace").read():
                    print(f"{where}: evidence not found: {ev}"); bad += 1
            if r.get("identifiers") is False:
                words = set(re.findall(r"[a-z0-9]+", r["q"].lower()))
                pathwords = set()
                for g in r["gold"]:
                    pathwords |= set(re.findall(r"[a-z0-9]+", g.lower())) - {"django", "py", "contrib", "__init__"}
                leak = sorted(w for w in words & pathwords if len(w) > 2)
                if leak:
                    print(f"{where}: note: question shares path words {leak} ({r['id']})")
        print(f"{os.path.basename(path)}: {n} records")
    print("errors:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
