#!/usr/bin/env python3
"""Build the re-implementation tasks (bench/eval/reimplement-tasks.jsonl) from real releases.

  python3 bench/eval/build_reimplement.py [--work bench/work/reimplement] [--out FILE]
                                          [--trees-only]

The project: more-itertools from PyPI, pure Python, whose sdists ship `tests/` (unittest, the
standard library only). Its consecutive source releases 10.0.0 … 11.2.1 are downloaded with
`python3 -m pip download --no-deps --no-binary :all:` into WORK/downloads and unpacked into
WORK/src/<package>-<version> (nothing else is fetched; bench/work/ is not committed).
11.2.0's sdist has no tests/, so it is skipped: 11.1.0 is compared with 11.2.1 directly.

For each pair of consecutive releases (old, new), a task is every public top-level function
of more_itertools/more.py or recipes.py in `new` that
  - is bound nowhere at module level in `old` (no def, assignment or import of that name in
    more.py, recipes.py or __init__.py: a moved or renamed function is not "added"),
  - has a docstring (the docstring tells what to implement),
  - is named by test methods of `new`'s tests/ (`mi.NAME` or `NAME`): those are the task's
    tests (a whole TestCase when every one of its methods names it),
  - and whose tests pass on the release as shipped and fail once the body is replaced by
    `raise NotImplementedError` (checked here, with `python3 -m unittest` on this machine).
Tasks are capped at CAP, chosen by the hash below, so a rebuild gives the same file.

Each line: {"id", "package", "old_version", "new_version", "tree", "file", "function",
"line", "tests", "split", "source"}. split: "held-out" when the 64-bit FNV-1a hash of
"reimplement/<id>" is odd, else "tuning" (the rule of build_sets.py and `sift eval`).

`stub(text, name)` is shared with bench/agent_bench.py (--suite reimplement).
With --trees-only the releases the task file names are downloaded and unpacked, and nothing
else is done (agent-bench.sh calls it so).
"""
import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "more-itertools"
MODULE = "more_itertools"
VERSIONS = ["10.0.0", "10.1.0", "10.2.0", "10.3.0", "10.4.0", "10.5.0", "10.6.0", "10.7.0",
            "10.8.0", "11.0.0", "11.0.1", "11.0.2", "11.1.0", "11.2.0", "11.2.1"]
FILES = ("more.py", "recipes.py")
CAP = 20
STUB = "raise NotImplementedError"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_sets import fnv1a  # noqa: E402  (the one split hash of bench/eval/)


def split_of(rid):
    return "held-out" if fnv1a(f"reimplement/{rid}") % 2 == 1 else "tuning"


def tree_of(work, version):
    return os.path.join(work, "src", f"{PACKAGE}-{version}")


def fetch(work, version):
    """The sdist of `version`, unpacked into WORK/src/more-itertools-VERSION; its path."""
    dest = tree_of(work, version)
    if os.path.isdir(dest):
        return dest
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads, exist_ok=True)
    names = lambda: [f for f in os.listdir(downloads)
                     if f.lower().replace("_", "-") == f"{PACKAGE}-{version}.tar.gz"]
    if not names():
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", f"{PACKAGE}=={version}", "-d", downloads],
                       check=True)
    archive = os.path.join(downloads, names()[0])
    tmp = tempfile.mkdtemp(dir=os.path.join(work))
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(tmp)
    (top,) = os.listdir(tmp)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    os.rename(os.path.join(tmp, top), dest)
    os.rmdir(tmp)
    return dest


def module_names(tree):
    """Every name bound at module level (defs, classes, assignments, imports, in if/try too)."""
    names = set()
    for f in FILES + ("__init__.py",):
        path = os.path.join(tree, MODULE, f)
        if not os.path.exists(path):
            continue
        stack = list(ast.parse(open(path).read()).body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    stack.extend(getattr(node, part, []) or [])
            elif isinstance(node, ast.ExceptHandler):
                stack.extend(node.body)
    return names


def functions(tree):
    """Public top-level functions of more.py and recipes.py: name -> (file, node)."""
    out = {}
    for f in FILES:
        for node in ast.parse(open(os.path.join(tree, MODULE, f)).read()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                out[node.name] = (f, node)
    return out


def stub(text, name):
    """`text` (a module's source) with top-level function `name`'s body, after its docstring,
    replaced by `raise NotImplementedError`. Returns (stubbed text, old_text, new_text): the
    edit that restores the original (old_text occurs exactly once in the stubbed text)."""
    node = next(n for n in ast.parse(text).body
                if isinstance(n, ast.FunctionDef) and n.name == name)
    doc = node.body[0]
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)) or len(node.body) < 2:
        raise ValueError(f"{name} has no docstring followed by a body")
    lines = text.splitlines(keepends=True)
    indent = " " * node.body[1].col_offset
    start, end = doc.end_lineno, node.end_lineno  # body: lines[start:end] (0-based)
    body = "".join(lines[start:end]).rstrip("\n")
    stub_line = f"{indent}{STUB}"
    stubbed = "".join(lines[:start]) + stub_line + "\n" + "".join(lines[end:])
    old, new = stub_line, body
    if stubbed.count(old) != 1:  # then with the docstring's closing line before it
        closing = lines[start - 1].rstrip("\n")
        old, new = f"{closing}\n{stub_line}", f"{closing}\n{body}"
    if stubbed.count(old) != 1:
        raise ValueError(f"the stub of {name} is not unique in its file")
    return stubbed, old, new


def test_methods(tree):
    """(test id, class id, names it references) for every test method of tests/test_*.py."""
    out = []
    for path in sorted(os.listdir(os.path.join(tree, "tests"))):
        if not re.match(r"test_\w+\.py$", path):
            continue
        mod = f"tests.{path[:-3]}"
        for cls in ast.parse(open(os.path.join(tree, "tests", path)).read()).body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test"):
                    refs = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
                    refs |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
                    out.append((f"{mod}.{cls.name}.{fn.name}", f"{mod}.{cls.name}", refs))
    return out


def tests_for(methods, name):
    """The test ids naming `name`: whole classes when all their methods do, else methods."""
    by_class = {}
    for tid, cid, refs in methods:
        by_class.setdefault(cid, []).append((tid, name in refs))
    ids = []
    for cid, rows in by_class.items():
        hits = [tid for tid, hit in rows if hit]
        ids.extend([cid] if hits and len(hits) == len(rows) else hits)
    return ids


def unittest(tree, ids, timeout=300):
    r = subprocess.run([sys.executable, "-m", "unittest", *ids], cwd=tree, capture_output=True,
                       text=True, timeout=timeout, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return r.returncode == 0, r.stderr[-400:]


def check_task(tree, file, name, ids):
    """Whether the tests pass as shipped and fail with the stub (on a scratch copy)."""
    ok, detail = unittest(tree, ids)
    if not ok:
        return f"tests fail as shipped: {detail}"
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "t")
        shutil.copytree(tree, copy)
        path = os.path.join(copy, MODULE, file)
        with open(path) as f:
            stubbed, _, _ = stub(f.read(), name)
        with open(path, "w") as f:
            f.write(stubbed)
        ok, _ = unittest(copy, ids)
    return "tests pass with the stub" if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=os.path.join(HERE, "..", "work", "reimplement"))
    ap.add_argument("--out", default=os.path.join(HERE, "reimplement-tasks.jsonl"))
    ap.add_argument("--trees-only", action="store_true")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    if args.trees_only:
        with open(args.out) as f:
            wanted = sorted({json.loads(l)["new_version"] for l in f if l.strip()})
        for v in wanted:
            print(fetch(work, v))
        return
    trees = {v: fetch(work, v) for v in VERSIONS}
    usable = [v for v in VERSIONS if os.path.isdir(os.path.join(trees[v], "tests"))]
    for v in VERSIONS:
        if v not in usable:
            print(f"skipped {PACKAGE} {v}: its sdist has no tests/", file=sys.stderr)
    tasks = []
    for old, new in zip(usable, usable[1:]):
        before = module_names(trees[old])
        methods = test_methods(trees[new])
        for name, (file, node) in sorted(functions(trees[new]).items()):
            if name in before:
                continue
            rid = f"{PACKAGE}-{new}/{name}"
            ids = tests_for(methods, name)
            why = None if ids else "no test names it"
            if why is None:
                try:
                    why = check_task(trees[new], file, name, ids)
                except ValueError as e:
                    why = str(e)
            if why:
                print(f"dropped {rid}: {why}", file=sys.stderr)
                continue
            tasks.append({
                "id": rid, "package": PACKAGE, "old_version": old, "new_version": new,
                "tree": f"{PACKAGE}-{new}", "file": f"{MODULE}/{file}", "function": name,
                "line": node.lineno, "tests": ids, "split": split_of(rid),
                "source": f"pypi:{PACKAGE}=={new} sdist, {MODULE}/{file}:{node.lineno} "
                          f"(absent in {old})"})
            print(f"task {rid}: {len(ids)} test ids", file=sys.stderr)
    if len(tasks) > CAP:
        print(f"{len(tasks)} tasks pass every check; keeping {CAP}, chosen by hash", file=sys.stderr)
        keep = {t["id"] for t in sorted(tasks, key=lambda t: fnv1a(t["id"]))[:CAP]}
        tasks = [t for t in tasks if t["id"] in keep]
    with open(args.out, "w") as f:
        for t in tasks:
            f.write(json.dumps(t) + "\n")
    splits = {s: sum(t["split"] == s for t in tasks) for s in ("tuning", "held-out")}
    print(f"wrote {len(tasks)} tasks to {args.out} {splits}", file=sys.stderr)


if __name__ == "__main__":
    main()
