#!/usr/bin/env python3
"""The edit-application benchmark: real changes between consecutive releases of real projects
(Python packages from PyPI, Rust crates from crates.io), each changed hunk turned into the
agent's `edit` tool form (old_text -> new_text, with as many context lines as it takes to be
unique, as a model is told to write it), also re-indented and with trailing whitespace
stripped, applied through the tool's matcher (engine/examples/edit_apply.rs) to the
old file, and compared with the new file. The baseline applies the same hunks with GNU patch,
without line numbers (every hunk says line 1, so patch has to find it by its context), with
its default fuzz and with --ignore-whitespace.

Counts per file: exact (the result is the new file), refused (an edit failed loudly: the model
is told why and retries), and silently wrong (every edit "applied" but the result differs).

Usage: edit_bench.py EDIT_APPLY_BINARY WORKDIR [--json OUT]
"""

import difflib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# (registry, package, old version, new version): consecutive releases with real fixes.
# TUNING is what the matcher's rules were developed against (its failures were looked at;
# the second group was a first held-out set, looked at after it showed silent wrong edits,
# so it is tuning now); HELD_OUT was added after the last change to the rules and is
# reported as it came, to check that they carry over.
TUNING = [
    ("pypi", "django", "5.1.2", "5.1.3"),
    ("pypi", "django", "5.1.3", "5.1.4"),
    ("pypi", "requests", "2.32.2", "2.32.3"),
    ("pypi", "flask", "3.0.2", "3.0.3"),
    ("pypi", "click", "8.1.6", "8.1.7"),
    ("pypi", "jinja2", "3.1.3", "3.1.4"),
    ("pypi", "werkzeug", "3.0.3", "3.0.4"),
    ("crates", "serde_json", "1.0.127", "1.0.128"),
    ("crates", "anyhow", "1.0.85", "1.0.86"),
    ("crates", "log", "0.4.21", "0.4.22"),
    ("crates", "regex-automata", "0.4.7", "0.4.8"),
    ("pypi", "httpx", "0.27.0", "0.27.2"),
    ("pypi", "rich", "13.7.0", "13.7.1"),
    ("pypi", "pytest", "8.3.2", "8.3.3"),
    ("pypi", "attrs", "23.2.0", "24.1.0"),
    ("pypi", "sqlparse", "0.5.0", "0.5.1"),
    ("crates", "serde", "1.0.209", "1.0.210"),
    ("crates", "itoa", "1.0.10", "1.0.11"),
    ("crates", "memchr", "2.7.2", "2.7.4"),
    ("crates", "semver", "1.0.22", "1.0.23"),
]
HELD_OUT = [
    ("pypi", "markdown", "3.6", "3.7"),
    ("pypi", "idna", "3.7", "3.8"),
    ("pypi", "urllib3", "2.2.2", "2.2.3"),
    ("pypi", "packaging", "24.0", "24.1"),
    ("pypi", "pluggy", "1.4.0", "1.5.0"),
    ("crates", "bytes", "1.7.1", "1.7.2"),
    ("crates", "once_cell", "1.19.0", "1.20.0"),
    ("crates", "smallvec", "1.13.1", "1.13.2"),
    ("crates", "thiserror-impl", "1.0.63", "1.0.64"),
]
PAIRS = [(p, "tuning") for p in TUNING] + [(p, "held-out") for p in HELD_OUT]

SOURCE_EXTS = (".py", ".rs", ".js", ".ts", ".html", ".txt", ".toml", ".md", ".cfg")


def fetch(workdir, registry, name, version):
    """The release's files under workdir/src/NAME-VERSION (downloaded once)."""
    dest = os.path.join(workdir, "src", f"{name}-{version}")
    if os.path.isdir(dest):
        return dest
    dl = os.path.join(workdir, "downloads")
    os.makedirs(dl, exist_ok=True)
    tmp = dest + ".tmp"
    if registry == "pypi":
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary", ":all:", f"{name}=={version}", "-d", dl],
            check=True,
        )
        wheel = [f for f in os.listdir(dl)
                 if f.lower().startswith(name.lower().replace("-", "_") + "-" + version + "-")
                 and f.endswith(".whl")]
        if not wheel:
            raise SystemExit(f"no wheel for {name} {version} in {dl}")
        with zipfile.ZipFile(os.path.join(dl, wheel[0])) as z:
            z.extractall(tmp)
    else:
        crate = os.path.join(dl, f"{name}-{version}.crate")
        if not os.path.exists(crate):
            url = f"https://static.crates.io/crates/{name}/{name}-{version}.crate"
            subprocess.run(["curl", "-sSfL", "-o", crate, url], check=True)
        with tarfile.open(crate) as t:
            t.extractall(tmp, filter="data")
        inner = os.path.join(tmp, f"{name}-{version}")
        tmp2 = tmp + "2"
        os.rename(inner, tmp2)
        os.rmdir(tmp)
        tmp = tmp2
    os.rename(tmp, dest)
    return dest


def text_files(root):
    out = {}
    for d, _, files in os.walk(root):
        if ".dist-info" in d:
            continue
        for f in files:
            if not f.endswith(SOURCE_EXTS):
                continue
            p = os.path.join(d, f)
            try:
                with open(p, encoding="utf-8", newline="") as fh:
                    text = fh.read()
            except (UnicodeDecodeError, OSError):
                continue
            if len(text) < 1_000_000:
                out[os.path.relpath(p, root)] = text
    return out


def count(hay, needle):
    n, i = 0, hay.find(needle)
    while i != -1:
        n += 1
        i = hay.find(needle, i + 1)
    return n


def hunks(old, new):
    """The file's changes as the edit tool's (old_text, new_text) pairs, in order, each unique
    in the text as it is when its turn comes, plus the line-level hunk for patch."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    cur = list(a)  # the text as edits so far left it
    shift = 0
    out = []
    for tag, i1, i2, j1, j2 in ops:
        s, e = i1 + shift, i2 + shift  # the old lines' place in cur
        new_lines = b[j1:j2]
        text = "".join(cur)
        for ctx in range(0, 40):
            if ctx == 0 and (e == s or not "".join(cur[s:e]).strip()):
                continue  # an insertion, or blank lines, needs an anchor
            before = cur[max(0, s - ctx):s]
            after = cur[e:e + ctx]
            old_text = "".join(before + cur[s:e] + after)
            if old_text.strip() and count(text, old_text) == 1:
                break
        else:
            return None  # cannot be made unique (pathological): the file is left out
        new_text = "".join(before + new_lines + after)
        out.append((old_text, new_text))
        cur[s:e] = new_lines
        shift += (j2 - j1) - (i2 - i1)
    return out


def indentation(line):
    return line[: len(line) - len(line.lstrip())]


def reindent(old_text, new_text):
    """Both texts with their common indentation removed (a model quoting a method flush left)."""
    lines = [l for l in (old_text + new_text).splitlines() if l.strip()]
    if not lines:
        return None
    common = os.path.commonprefix([indentation(l) for l in lines])
    if not common:
        return None
    def strip(t):
        return "".join(l[len(common):] if l.startswith(common) else l.lstrip(" \t") if l.strip() else l
                       for l in t.splitlines(keepends=True))
    return strip(old_text), strip(new_text)


def rstrip(old_text, new_text):
    """old_text misquoted: trailing whitespace stripped from every line, and both texts without
    their last line break (new_text is what the model wants, so it is kept as it is)."""
    lines = old_text.splitlines()
    old = "".join(l.rstrip() + "\n" for l in lines)
    # Both last line breaks go, unless one ends a blank line (dropping it would change what
    # the text says: "\n" is a blank line, "" is nothing).
    new_last = new_text.splitlines()[-1] if new_text.strip() else ""
    drop = (old_text.endswith("\n") and lines and lines[-1].strip()
            and (new_text == "" or (new_text.endswith("\n") and new_last.strip())))
    if drop:
        old = old[:-1]
    new = new_text[:-1] if drop and new_text else new_text
    return old, new


def resolvable(old, true_edits, norm):
    """Whether a matcher that never guesses could place every edit of a perturbed variant:
    each old_text, compared line by line after `norm` (what the perturbation lost: trailing
    whitespace, indentation), occurs once in the text as the earlier edits left it. A file
    where one does not is beyond any such matcher: the edit matches several places equally."""
    cur = old
    for o, n in true_edits:
        hay = [norm(l) for l in cur.splitlines()]
        needle = [norm(l) for l in o.splitlines()]
        k = len(needle)
        if sum(1 for i in range(len(hay) - k + 1) if hay[i:i + k] == needle) != 1:
            return False
        cur = cur.replace(o, n, 1)
    return True


NORMS = {"clean": lambda l: l, "trailing whitespace": str.rstrip, "reindented": str.strip}


def patch_for(edits):
    """A unified diff of the edits whose every hunk claims line 1."""
    out = ["--- a/f\n", "+++ b/f\n"]
    for old_text, new_text in edits:
        a = old_text.splitlines(keepends=True)
        b = new_text.splitlines(keepends=True)
        body = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag == "equal":
                body += [" " + l for l in a[i1:i2]]
            else:
                body += ["-" + l for l in a[i1:i2]]
                body += ["+" + l for l in b[j1:j2]]
        body = [l if l.endswith("\n") else l + "\n\\ No newline at end of file\n" for l in body]
        out.append(f"@@ -1,{len(a)} +1,{len(b)} @@\n")
        out += body
    return "".join(out)


def run_patch(old, new, edits, flags):
    with tempfile.TemporaryDirectory() as d:
        src, dst, diff = (os.path.join(d, n) for n in ("old", "out", "diff"))
        with open(src, "w", newline="") as f:
            f.write(old)
        with open(diff, "w", newline="") as f:
            f.write(patch_for(edits))
        r = subprocess.run(["patch", "-s", "--no-backup-if-mismatch", "-r", "-", *flags,
                            "-o", dst, src, diff], capture_output=True)
        if r.returncode != 0 or not os.path.exists(dst):
            return "refused"
        with open(dst, newline="") as f:
            return "exact" if f.read() == new else "wrong"


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    binary, workdir = sys.argv[1], sys.argv[2]
    json_out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    cases = []
    n_hunks = 0
    left_out = 0
    for (registry, name, v1, v2), split in PAIRS:
        a = text_files(fetch(workdir, registry, name, v1))
        b = text_files(fetch(workdir, registry, name, v2))
        for rel in sorted(set(a) & set(b)):
            if a[rel] == b[rel]:
                continue
            edits = hunks(a[rel], b[rel])
            if edits is None:
                left_out += 1
                continue
            n_hunks += len(edits)
            base = {"old": a[rel], "new": b[rel], "project": f"{name} {v1}->{v2}", "path": rel,
                    "split": split}
            base["true_edits"] = edits
            cases.append({**base, "id": f"{name}/{v1}/{rel}/clean", "variant": "clean", "edits": edits})
            re = [reindent(o, n) for o, n in edits]
            if any(r is not None for r in re):
                re = [r if r is not None else e for r, e in zip(re, edits)]
                cases.append({**base, "id": f"{name}/{v1}/{rel}/reindent", "variant": "reindented", "edits": re})
            cases.append({**base, "id": f"{name}/{v1}/{rel}/rstrip", "variant": "trailing whitespace",
                          "edits": [rstrip(o, n) for o, n in edits]})
    sent = ({k: v for k, v in c.items() if k != "true_edits"} for c in cases)
    proc = subprocess.run([binary], input="".join(json.dumps(c) + "\n" for c in sent),
                          capture_output=True, text=True, check=True)
    results = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    table = {}
    for c in cases:
        r = results[c["id"]]
        tool = "exact" if r["exact"] else ("wrong" if r["applied"] else "refused")
        row = table.setdefault(f'{c["split"]}: {c["variant"]}',
                               {"files": 0, "sift": {}, "patch": {}, "patch -l": {}, "ceiling": 0})
        row["files"] += 1
        row["ceiling"] += resolvable(c["old"], c["true_edits"], NORMS[c["variant"]])
        row["sift"][tool] = row["sift"].get(tool, 0) + 1
        for label, flags in (("patch", []), ("patch -l", ["-l"])):
            p = run_patch(c["old"], c["new"], c["edits"], flags)
            row[label][p] = row[label].get(p, 0) + 1
        if tool == "wrong":
            print(f"SILENTLY WRONG: {c['id']}", file=sys.stderr)
    projects = sorted({f"{n} {a}->{b} ({r}, {split})" for (r, n, a, b), split in PAIRS})
    print(f"edit benchmark: {len(cases)} cases, {n_hunks} hunks, from {len(projects)} release pairs"
          f" ({left_out} files left out: a hunk could not be made unique)")
    print("sources: " + ", ".join(projects))
    print(f"{'split: variant':<32}{'files':>6}  {'tool':<10}{'exact':>8}{'refused':>9}{'wrong':>7}")
    for variant, row in table.items():
        n = row["files"]
        for tool in ("sift", "patch", "patch -l"):
            counts = row[tool]
            print(f"{variant:<32}{n:>6}  {tool:<10}{counts.get('exact', 0) / n:>8.1%}"
                  f"{counts.get('refused', 0):>9}{counts.get('wrong', 0):>7}")
        print(f"{variant:<32}{n:>6}  {'ceiling':<10}{row['ceiling'] / n:>8.1%}"
              "  (files whose every edit is unique up to what the variant lost)")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"cases": len(cases), "hunks": n_hunks, "table": table, "pairs": PAIRS}, f, indent=1)


if __name__ == "__main__":
    main()
