#!/usr/bin/env python3
"""Writes flask-fixes.jsonl: fix commits of Flask's public history -> the source files they
changed, a second repository's held-out set built the way Django's fix commits were, on which
nothing is tuned.

  python3 bench/eval/build_flask_fixes.py --git-dir /path/to/flask/.git \
      [--at 2ac89889f4cc330eabd50f295dcef02828522c69] [--out bench/eval/flask-fixes.jsonl]

Corpus: the Flask tree at --at (github.com/pallets/flask, 2026-04-08). A commit is taken when
it is not a merge, its subject says it fixes something (starts with fix/fixes/fixed, any
case), it changed 1 to 3 files under src/flask/ (tests, docs and the changelog left out), and
every one of them exists in the corpus tree. q = the subject with "(#1234)" and "fix #1234"
references cut, plus the body when it is prose of at least 60 characters; gold = those files.
Split: "held-out" when the FNV-1a hash of "flask-fixes/<id>" is odd, as for every set.
"""
import argparse
import json
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = re.compile(r"^(fix|fixes|fixed)\b", re.I)
REF = re.compile(r"\(#\d+\)|\b(fix(es|ed)?|close[sd]?|refs?)\s+#\d+\b,?", re.I)


def git(gd, *args):
    return subprocess.run(["git", "--git-dir", gd, *args], check=True,
                          capture_output=True, text=True).stdout


def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001b3) % (1 << 64)
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--at", default="2ac89889f4cc330eabd50f295dcef02828522c69")
    ap.add_argument("--out", default=os.path.join(HERE, "flask-fixes.jsonl"))
    a = ap.parse_args()
    tree = set(git(a.git_dir, "ls-tree", "-r", "--name-only", a.at).split("\n"))
    log = git(a.git_dir, "log", "--no-merges", a.at, "--format=%x1e%H%x1f%cs%x1f%s%x1f%b%x1f",
              "--name-only")
    out = []
    for rec in log.split("\x1e")[1:]:
        head, _, files = rec.rpartition("\x1f")
        sha, date, subject, body = head.split("\x1f", 3)
        if not FIX.match(subject.strip()):
            continue
        gold = sorted({f for f in files.split() if f.startswith("src/flask/")})
        if not 1 <= len(gold) <= 3 or not all(f in tree for f in gold):
            continue
        q = REF.sub("", subject).strip(" .-:")
        body = " ".join(l.strip() for l in body.splitlines()
                        if l.strip() and not re.match(r"^(co-authored-by|signed-off-by)", l, re.I))
        if len(body) >= 60 and not body.lower().startswith(("this reverts", "merge")):
            q = f"{q}. {body}"
        if len(q.split()) < 3:
            continue
        rid = f"flask-fix-{sha[:10]}"
        out.append({"id": rid, "q": q, "gold": gold, "kind": "fix-commit", "date": date,
                    "commit": sha, "source": f"pallets/flask@{sha}",
                    "split": "held-out" if fnv1a(f"flask-fixes/{rid}") % 2 else "tuning"})
    with open(a.out, "w", encoding="utf-8") as f:
        for r in sorted(out, key=lambda r: r["date"]):
            f.write(json.dumps(r) + "\n")
    print(f"{a.out}: {len(out)} commits")


if __name__ == "__main__":
    main()
