#!/usr/bin/env python3
"""Build the larger, generated eval sets from registry packages (material sift did not write).

  python3 bench/eval/build_sets.py \
      --django-sdist DIR     # Django-5.1.4 from PyPI's sdist (`pip download django==5.1.4
                             #   --no-binary :all: --no-deps`, unpacked): its docs/ are read
      --django-corpus DIR    # the corpus: the Django 5.1.4 wheel unzipped (bench/work/django)
      --crate DIR            # tantivy-0.27.0 from crates.io (~/.cargo/registry/src/*/tantivy-0.27.0)
      [--django-git DIR]     # a clone of Django's history (for the issue-text set)
      [--out bench/eval]

Writes, one JSON object per line, each with "id", "q", "gold", "split", "kind", "source":

- django-docs.jsonl: Django's reference documentation describes its API in prose written apart
  from the code. Every `.. function::`, `.. class::`, `.. method::` and `.. decorator::`
  directive of docs/ref and docs/topics whose name resolves to exactly one defining file of the
  corpus gives a question: the first sentences of its description, reST markup removed and
  code spans written as plain words (``allow_unicode`` → "allow unicode"), so the question
  names no identifier. Gold: the file that defines the name. The docs are not in the corpus.
- django-docs-identifiers.jsonl: the same directives as lookups (`Class.method`, `function`).
- django-issues.jsonl (with --django-git): every "Fixed #N -- …" commit of Django's main
  branch from 2022-01-01 to 2024-07-26 whose source changes (under django/, no tests, docs or
  catalogs) are 1–3 Python files that all exist in 5.1.4, except the 42 commits of
  django-fixes.jsonl (the earlier fusion was tuned on those); q: the subject without the
  prefix plus the descriptive body (as build_fixes.py does), gold: those files. Not hand-picked.
- tantivy-docs.jsonl: tantivy 0.27.0's rustdoc summaries. For each `pub` fn, struct, enum,
  trait or type in src/ with a `///` comment, the comment's first sentence (code spans as
  words) → the file. Sentences shorter than five words or found at more than one item are
  dropped. These summaries are in the indexed chunks, unlike the Django docs: an easier set.
- tantivy-identifiers.jsonl: the same items' names, where the name is defined in one file.

split: "held-out" when the 64-bit FNV-1a hash of "<set>/<id>" is odd, else "tuning" (the
same rule as `sift eval` applies to records without a split). Sets are capped at 400
records, chosen by the same hash, so they stay deterministic.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
CAP = 400


def fnv1a(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def split_of(set_name, rid):
    return "held-out" if fnv1a(f"{set_name}/{rid}") % 2 == 1 else "tuning"


def words_of(ident):
    """`allow_unicode` → "allow unicode", `HttpResponse` → "http response"."""
    ident = ident.strip("`'\"()~.!*: ")
    ident = ident.split(".")[-1] if "." in ident and " " not in ident else ident
    ident = re.sub(r"\(.*?\)", "", ident)
    ident = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", ident)
    ident = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", ident)
    return re.sub(r"[_\W]+", " ", ident).strip().lower()


def plain_rst(text):
    """reST prose → plain words: roles and literals become the words of what they name."""

    def role(m):
        body = m.group(1)
        t = re.match(r"(.*?)\s*<[^>]*>$", body)
        if t and t.group(1):
            return t.group(1)
        return words_of(body)

    text = re.sub(r":[a-z:]+:`([^`]*)`", role, text)
    text = re.sub(r"``([^`]*)``", lambda m: words_of(m.group(1)), text)
    text = re.sub(r"`([^`<]*)(?:<[^>]*>)?`_*", r"\1", text)
    text = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def first_sentences(text, max_words=40):
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)
    out = []
    for p in parts:
        out.append(p)
        if len(" ".join(out).split()) >= 12:
            break
    words = " ".join(out).split()
    return " ".join(words[:max_words]).rstrip(":")


def finalize(set_name, records):
    seen = set()
    uniq = []
    for r in records:
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        uniq.append(r)
    uniq.sort(key=lambda r: fnv1a(f"{set_name}/{r['id']}/pick"))
    uniq = uniq[:CAP]
    uniq.sort(key=lambda r: r["id"])
    for r in uniq:
        r["split"] = split_of(set_name, r["id"])
    return uniq


def write(out_dir, set_name, records):
    path = os.path.join(out_dir, set_name + ".jsonl")
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    held = sum(r["split"] == "held-out" for r in records)
    print(f"{path}: {len(records)} records ({len(records) - held} tuning, {held} held-out)")


# --- Django ---------------------------------------------------------------------------------

DEF_RE = r"^[ \t]*(?:async\s+)?(?:def|class)\s+{}\b"


def python_defs(corpus):
    """name → set of files (relative) defining it with def/class at any depth."""
    defs = defaultdict(set)
    for path in glob.glob(os.path.join(corpus, "django", "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, corpus)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in re.finditer(r"^[ \t]*(?:async\s+)?(?:def|class)\s+(\w+)", text, re.M):
            defs[m.group(1)].add(rel)
    return defs


def module_file(corpus, module):
    base = os.path.join(corpus, *module.split("."))
    for cand in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(cand):
            return os.path.relpath(cand, corpus)
    return None


def resolve(corpus, defs, module, dotted):
    """The one file defining `dotted` (Name or Class.method) as documented under `module`."""
    parts = dotted.split(".")
    if parts[0] == "django":  # fully qualified: find the longest module prefix
        for i in range(len(parts) - 1, 0, -1):
            if module_file(corpus, ".".join(parts[:i])):
                module, parts = ".".join(parts[:i]), parts[i:]
                break
        else:
            return None
    if not parts:
        return None
    owner = parts[0]  # the class for a method, else the name itself
    cands = defs.get(owner, set())
    if module:
        mod = module_file(corpus, module)
        if mod and mod in cands:
            return mod
        pkg = module.replace(".", "/")
        cands = {c for c in cands if c.startswith(pkg + "/") or c.startswith(pkg + ".py")}
    if len(cands) == 1:
        f = next(iter(cands))
        if len(parts) > 1:  # the method must be in that file too
            text = open(os.path.join(corpus, f), encoding="utf-8").read()
            if not re.search(DEF_RE.format(re.escape(parts[-1])), text, re.M):
                return None
        return f
    return None


DIRECTIVE = re.compile(r"^(\s*)\.\. (function|class|method|decorator|staticmethod|classmethod)::\s+([\w.]+)")


def django_docs(sdist, corpus):
    defs = python_defs(corpus)
    prose, lookups = [], []
    files = sorted(glob.glob(os.path.join(sdist, "docs", "ref", "**", "*.txt"), recursive=True))
    files += sorted(glob.glob(os.path.join(sdist, "docs", "topics", "**", "*.txt"), recursive=True))
    for path in files:
        rel_doc = os.path.relpath(path, sdist)
        lines = open(path, encoding="utf-8").read().splitlines()
        module = None
        cls_stack = []  # (indent, class name)
        for i, line in enumerate(lines):
            m = re.match(r"^\.\. (?:module|currentmodule)::\s+([\w.]+)", line)
            if m:
                module = m.group(1)
                cls_stack = []
                continue
            m = DIRECTIVE.match(line)
            if not m:
                continue
            indent, kind, name = len(m.group(1)), m.group(2), m.group(3)
            while cls_stack and cls_stack[-1][0] >= indent:
                cls_stack.pop()
            if kind == "class":
                cls_stack.append((indent, name.split(".")[-1]))
            dotted = name
            if kind in ("method", "staticmethod", "classmethod") and "." not in name:
                if len(cls_stack) < 1 or (kind != "class" and cls_stack[-1][0] >= indent):
                    continue
                dotted = f"{cls_stack[-1][1]}.{name}"
            if not module and not dotted.startswith("django."):
                continue
            gold = resolve(corpus, defs, module, dotted)
            if not gold:
                continue
            # The description: the first paragraph of prose indented below the directive.
            para = []
            for nxt in lines[i + 1:]:
                if not nxt.strip():
                    if para:
                        break
                    continue
                ind = len(nxt) - len(nxt.lstrip())
                if ind <= indent:
                    break
                s = nxt.strip()
                if s.startswith(".. ") or s.startswith(":") and not para:
                    if para:
                        break
                    continue
                if s.startswith(">>>") or s.endswith("::") and not para:
                    break
                para.append(s)
            short = ".".join(dotted.split(".")[-2:]) if kind != "function" else dotted.split(".")[-1]
            rid = f"{short}@{rel_doc}:{i + 1}"
            src = f"Django 5.1.4 sdist (PyPI), {rel_doc} line {i + 1}, `.. {kind}:: {name}`"
            lookups.append({"id": "docid-" + rid, "q": short, "gold": [gold],
                            "kind": "identifier", "source": src})
            text = first_sentences(plain_rst(" ".join(para)))
            if len(text.split()) < 5 or "``" in text:
                continue
            prose.append({"id": "doc-" + rid, "q": text, "gold": [gold], "kind": "docs-prose",
                          "source": src})
    # A lookup asked twice (documented in two places) is one question.
    by_q = {}
    for r in lookups:
        by_q.setdefault(r["q"], r)
    return finalize("django-docs", prose), finalize("django-docs-identifiers", list(by_q.values()))


DROP_LINE = re.compile(
    r"^(co-authored-by|signed-off-by|reviewed-by|thanks|thank you|regression in|"
    r"refs #|partially reverts|backport of|follow up to)", re.I)


def clean_body(body):
    paras = []
    for para in re.split(r"\n\s*\n", body):
        text = " ".join(ln.strip() for ln in para.splitlines() if ln.strip())
        if text and not DROP_LINE.match(text):
            paras.append(text)
    text = "\n".join(paras)
    return text if len(text) >= 60 else ""


def tuned_fixes():
    """The commits of django-fixes.jsonl (hand-picked; the old fusion was tuned on them)."""
    path = os.path.join(HERE, "django-fixes.jsonl")
    return [json.loads(l)["commit"] for l in open(path) if l.strip()]


TUNED_FIXES = tuned_fixes()


def django_issues(git_dir, corpus):
    def git(*args):
        return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                              capture_output=True, text=True).stdout

    log = git("log", "--no-merges", "--since=2022-01-01", "--until=2024-07-27",
              "--format=%x00%H%x01%cs%x01%s%x01%b%x02", "--name-only", "main")
    out = []
    for rec in log.split("\x00")[1:]:
        head, _, names = rec.partition("\x02")
        sha, date, subject, body = head.split("\x01", 3)
        m = re.match(r"Fixed #(\d+)(?:, (?:Fixed|Refs) #\d+)* -- (.*)$", subject)
        if not m:
            continue
        files = [f for f in names.split() if f]
        gold = sorted(f for f in files if f.startswith("django/") and "/locale/" not in f
                      and not f.endswith((".po", ".mo")) and "/tests/" not in f)
        if not 1 <= len(gold) <= 3 or not all(g.endswith(".py") for g in gold):
            continue
        if not all(os.path.isfile(os.path.join(corpus, g)) for g in gold):
            continue
        if any(sha.startswith(c) for c in TUNED_FIXES):
            continue  # in django-fixes.jsonl, which the fusion was tuned on before
        b = clean_body(body)
        q = m.group(2) + (("\n\n" + b) if b else "")
        out.append({"id": f"issue-{m.group(1)}-{sha[:10]}", "q": q, "gold": gold,
                    "kind": "issue-text", "ticket": int(m.group(1)), "date": date,
                    "commit": sha, "source": f"django/django@{sha}"})
    return finalize("django-issues", out)


# --- tantivy --------------------------------------------------------------------------------

ITEM = re.compile(r"^\s*pub(?:\([^)]*\))?\s+(?:const\s+|async\s+|unsafe\s+)*"
                  r"(fn|struct|enum|trait|type)\s+(\w+)")


def rust_doc_text(lines):
    text = " ".join(l.strip()[3:].strip() for l in lines)
    text = re.sub(r"\[`([^`]*)`\](?:\([^)]*\)|\[[^\]]*\])?", lambda m: words_of(m.group(1)), text)
    text = re.sub(r"`([^`]*)`", lambda m: words_of(m.group(1)), text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[#*]+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def tantivy_sets(crate):
    items = []  # (name, kind, rel, line, summary)
    defs = defaultdict(set)
    for path in sorted(glob.glob(os.path.join(crate, "src", "**", "*.rs"), recursive=True)):
        rel = os.path.relpath(path, crate)
        lines = open(path, encoding="utf-8").read().splitlines()
        doc = []
        for i, line in enumerate(lines):
            s = line.strip()
            if s.startswith("///"):
                doc.append(line)
                continue
            if s.startswith("#[") or not s:
                if not s:
                    doc = []
                continue
            m = ITEM.match(line)
            if m:
                defs[m.group(2)].add(rel)
                if doc:
                    items.append((m.group(2), m.group(1), rel, i + 1, rust_doc_text(doc)))
            doc = []
    by_summary = defaultdict(int)
    for it in items:
        by_summary[first_sentences(it[4]).lower()] += 1
    prose, lookups = [], []
    for name, kind, rel, line, summary in items:
        src = f"tantivy 0.27.0 (crates.io), {rel} line {line}, `pub {kind} {name}`"
        rid = f"{name}@{rel}:{line}"
        if len(defs[name]) == 1 and len(name) > 3:
            lookups.append({"id": "rsid-" + rid, "q": name, "gold": [rel],
                            "kind": "identifier", "source": src})
        text = first_sentences(summary)
        if len(text.split()) < 5 or by_summary[text.lower()] > 1:
            continue
        prose.append({"id": "rsdoc-" + rid, "q": text, "gold": [rel], "kind": "doc-summary",
                      "source": src})
    return finalize("tantivy-docs", prose), finalize("tantivy-identifiers", lookups)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--django-sdist", required=True)
    ap.add_argument("--django-corpus", default=os.path.join(HERE, "..", "work", "django"))
    ap.add_argument("--crate", required=True)
    ap.add_argument("--django-git")
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    docs, ids = django_docs(a.django_sdist, a.django_corpus)
    write(a.out, "django-docs", docs)
    write(a.out, "django-docs-identifiers", ids)
    if a.django_git:
        write(a.out, "django-issues", django_issues(a.django_git, a.django_corpus))
    else:
        print("no --django-git: django-issues.jsonl not rebuilt", file=sys.stderr)
    tdocs, tids = tantivy_sets(a.crate)
    write(a.out, "tantivy-docs", tdocs)
    write(a.out, "tantivy-identifiers", tids)


if __name__ == "__main__":
    main()
