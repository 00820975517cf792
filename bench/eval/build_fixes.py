#!/usr/bin/env python3
"""Rebuild django-fixes.jsonl from Django's public git history.

Needs a clone of Django's history (any mirror of github.com/django/django main
that contains the commits below) and the Django 5.1.4 tree used as the corpus.

  python3 bench/eval/build_fixes.py --git-dir /path/to/django/.git \
      [--corpus bench/work/django] [--out bench/eval/django-fixes.jsonl]

For each commit listed in COMMITS: q = the subject without its "Fixed #N -- "
(or "Fixed #N, Refs #M -- ") prefix, plus the body when the body is descriptive
prose (trailers, "Regression in <sha>", "Thanks ..." lines dropped); gold = the
files the commit changed under django/ that are not tests, docs or translation
catalogs. A commit is refused if any gold file is missing from the corpus tree.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Hand-picked "Fixed #..." commits from Django's main branch (2023-06 .. 2024-07,
# the 5.0 / 5.1 / early 5.2 development cycles), chosen for spread across
# subsystems and for changes confined to at most three source files.
COMMITS = """
0e94f292cd f359990e49 8d6a20b656 6b3f55446f b9098538a9 d12184fedc 53e674d574
f1705c8780 38ad710aba 339977d444 d3a7ed5bcc 9c5fe93349 d2c5a30e5a e64d42e753
50a702f3fd 07c8d979ae f2388a4b73 cbf1e87398 eceb5e2eea a084c5d35a eb2d49b734
d1be05b3e9 cf107fe255 9c5e382b98 1b5338d03e 11393ab131 38eaf2f21a 9d52e0720f
705b1702bd 1c6e8ec4ed ad41f1c53a 64060d1c17 311718feb5 a6c7db1d1d 523fed1d2f
fe835c2355 f92e68c30a a7c73b944f 11920e7795 5aa4c0b675 0fcd72bc48 e16d0c176e
""".split()

DROP_LINE = re.compile(
    r"^(co-authored-by|signed-off-by|reviewed-by|thanks|thank you|regression in|"
    r"refs #|partially reverts|backport of|follow up to)", re.I)


def git(gd, *args):
    return subprocess.run(["git", "--git-dir", gd, *args], check=True,
                          capture_output=True, text=True).stdout


def clean_body(body):
    """Keep descriptive paragraphs; drop trailers, credits and regression refs."""
    paras = []
    for para in re.split(r"\n\s*\n", body):
        text = " ".join(ln.strip() for ln in para.splitlines() if ln.strip())
        if text and not DROP_LINE.match(text):
            paras.append(text)
    text = "\n".join(paras)
    # Only keep bodies that say something beyond a few words.
    return text if len(text) >= 60 else ""


def is_gold(path):
    return (path.startswith("django/")
            and "/locale/" not in path
            and not path.endswith((".po", ".mo"))
            and "/tests/" not in path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "work", "django"))
    ap.add_argument("--out", default=os.path.join(HERE, "django-fixes.jsonl"))
    a = ap.parse_args()
    out = []
    for short in COMMITS:
        sha = git(a.git_dir, "rev-parse", short + "^{commit}").strip()
        subject = git(a.git_dir, "log", "-1", "--format=%s", sha).strip()
        body = git(a.git_dir, "log", "-1", "--format=%b", sha)
        date = git(a.git_dir, "log", "-1", "--format=%cs", sha).strip()
        m = re.match(r"Fixed #(\d+)(?:, (?:Fixed|Refs) #\d+)* -- (.*)$", subject)
        if not m:
            sys.exit(f"{sha}: unexpected subject {subject!r}")
        ticket, desc = int(m.group(1)), m.group(2)
        files = [f for f in git(a.git_dir, "show", "--format=", "--name-only", sha).split() if f]
        gold = sorted(f for f in files if is_gold(f))
        if not gold:
            sys.exit(f"{sha}: no source files changed")
        missing = [g for g in gold if not os.path.isfile(os.path.join(a.corpus, g))]
        if missing:
            sys.exit(f"{sha}: gold files not in corpus: {missing}")
        b = clean_body(body)
        q = desc + (("\n\n" + b) if b else "")
        out.append({
            "id": f"fix-{ticket}",
            "q": q,
            "gold": gold,
            "commit": sha,
            "ticket": ticket,
            "date": date,
            "subject": subject,
            "source": f"django/django@{sha}",
        })
    with open(a.out, "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    print(f"wrote {len(out)} records to {a.out}")


if __name__ == "__main__":
    main()
