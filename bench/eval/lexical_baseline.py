#!/usr/bin/env python3
"""Quick file-level baseline for the sift eval sets (sanity check only).

For each query of each set, runs
    sift search --path CORPUS --json -k K --no-refresh --mode MODE "query"
de-duplicates the hits by file (keeping first occurrence), and takes the
query's rank as the position of the first file that is in "gold".
Prints recall@1/5/10 (share of queries with a gold file at rank <= N) and MRR
(mean of 1/rank, 0 when no gold file is returned) per set.

Usage:
  python3 bench/eval/lexical_baseline.py [--sift target/release/sift]
      [--corpus bench/work/django] [--k 10] [--mode lexical]
      [--max-per-file N] [--misses] [SET.jsonl ...]
Index first if needed: sift index bench/work/django
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def search(a, q):
    cmd = [a.sift, "search", "--path", a.corpus, "--json", "-k", str(a.k), "--no-refresh"]
    if a.mode:
        cmd += ["--mode", a.mode]
    if a.max_per_file:
        cmd += ["--max-per-file", str(a.max_per_file)]
    cmd += ["--", q]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"sift failed ({p.returncode}) on {q!r}: {p.stderr.strip()}")
    files = []
    for line in p.stdout.splitlines():
        if line.strip():
            path = json.loads(line)["path"]
            if path not in files:
                files.append(path)
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sets", nargs="*")
    ap.add_argument("--sift", default=os.path.join(ROOT, "target", "release", "sift"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "bench", "work", "django"))
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--mode", default="lexical", help="lexical|semantic|hybrid, '' for sift's default")
    ap.add_argument("--max-per-file", type=int, default=0)
    ap.add_argument("--misses", action="store_true", help="list queries with no gold file in the top k")
    a = ap.parse_args()
    sets = a.sets or sorted(glob.glob(os.path.join(HERE, "*.jsonl")))
    print(f"mode={a.mode or 'default'} k={a.k} max_per_file={a.max_per_file or '-'}")
    print(f"{'set':40} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for path in sets:
        recs = [json.loads(l) for l in open(path) if l.strip()]
        ranks = []
        for r in recs:
            files = search(a, r["q"])
            gold = set(r["gold"])
            rank = next((i + 1 for i, f in enumerate(files) if f in gold), None)
            ranks.append(rank)
            if a.misses and (rank is None or rank > 10):
                print(f"  miss {r.get('id')}: top={files[:3]}")
        n = len(ranks)
        rec = lambda k: sum(1 for x in ranks if x is not None and x <= k) / n
        mrr = sum(1 / x for x in ranks if x) / n
        print(f"{os.path.basename(path):40} {n:4d} {rec(1):6.3f} {rec(5):6.3f} {rec(10):6.3f} {mrr:6.3f}")


if __name__ == "__main__":
    main()
