#!/usr/bin/env python3
"""`sift search` latency with its freshness check, against ripgrep, side by side.

  python3 bench/fresh_bench.py --sift target/release/sift --corpus bench/work/django [--runs 10]

Copies nothing: the corpus gets a `.sift/` (indexed once, lexical + the default embeddings).
For each query, interleaved (rg, then each sift variant, `--runs` times after one warm-up):
  rg              rg -i -l -F over the same files (as bench/index_bench.py runs it)
  no-refresh      sift search --no-refresh (no freshness check at all: the floor)
  quick check     sift search (the default: the tree stamp, no walk; see indexer/src/fresh.rs)
  full walk       sift search with the tree stamp removed before each run (what every search
                  did before: walk the whole tree)
each in `--mode lexical` and in the default mode (hybrid). Prints p50 per variant and rg's p50
divided by it. Then checks correctness: a file changed in place (a new identifier appended)
is found by the next `sift search`.

Last, a second phase (a watcher would make the variants above skip their check):
  kept watching   sift search --keep-watching 120, after a first one left its watcher running
                  (`sift index --watch --idle-exit 120`): searches skip the check while it runs
interleaved with rg again; then an in-place edit must be found within 2 s (the watcher's
latency), and the watcher is stopped.

Then what a watcher costs the rest of the machine: `rg` over the corpus 20 times without a
watcher and 20 times while `sift index --watch` runs, 3 rounds, and the watcher's CPU time per
`rg` (from /proc). Nothing here is asserted by the test suite.
"""
import re
import signal
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERIES = ["QuerySet", "get_object_or_404", "csrf token", "middleware", "clickjacking",
           "select_related", "ValidationError", "migration autodetector", "cache key",
           "password hasher"]
RG_BASE = ["rg", "-i", "-l", "-F", "--hidden", "--no-messages", "--max-filesize", "1M",
           "-g", "!.sift/"]
STAMP = ".sift/index/tree-stamp.json"


def timed(cmd, before=None):
    if before:
        before()
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    if p.returncode not in (0, 1):
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return dt


def print_table(results, variants):
    """p50 per variant and mode, and rg's p50 (in the same mode) divided by it."""
    print(f"{'':14} {'lexical p50':>12} {'rg/sift':>8} {'hybrid p50':>12} {'rg/sift':>8}")
    for v in variants:
        cells = []
        for mode in ("lexical", "hybrid"):
            t, rg = results[mode][v], results[mode]["rg"]
            cells.append(f"{t * 1000:>9.1f} ms {rg / t:>7.1f}x")
        print(f"{v:14} {'  '.join(cells)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sift", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    root = Path(a.corpus).resolve()
    sift = str(Path(a.sift).resolve())
    subprocess.run([sift, "index", "-q", "--path", str(root)], check=True,
                   stdout=subprocess.DEVNULL)
    # A second run after the racy window writes the tree stamp for sure.
    time.sleep(2.1)
    subprocess.run([sift, "index", "-q", "--path", str(root)], check=True,
                   stdout=subprocess.DEVNULL)
    stamp = root / STAMP
    have_stamp = stamp.exists()

    def drop_stamp():
        stamp.unlink(missing_ok=True)

    def restamp():
        if not stamp.exists():
            subprocess.run([sift, "index", "-q", "--path", str(root)], check=True,
                           stdout=subprocess.DEVNULL)

    results = {}
    for mode in ("lexical", "hybrid"):
        m = ["--mode", mode] if mode == "lexical" else []
        variants = {
            "rg": (lambda q: RG_BASE + [a for w in q.split() for a in ("-e", w)] + [str(root)], None),
            "no-refresh": (lambda q: [sift, "search", "--path", str(root), "--no-refresh", *m, q], None),
            "quick check": (lambda q: [sift, "search", "--path", str(root), *m, q], restamp),
            "full walk": (lambda q: [sift, "search", "--path", str(root), *m, q], drop_stamp),
        }
        samples = {v: [] for v in variants}
        for q in QUERIES:
            for i in range(a.runs + 1):
                for v, (cmd, before) in variants.items():
                    dt = timed(cmd(q), before)
                    if i:
                        samples[v].append(dt)
        restamp()
        results[mode] = {v: statistics.median(s) for v, s in samples.items()}
    print(f"corpus {root} ({len(QUERIES)} queries x {a.runs} runs, interleaved; p50 of whole "
          f"processes; tree stamp written by sift index: {have_stamp})")
    print_table(results, ("rg", "no-refresh", "quick check", "full walk"))

    # Correctness: an in-place edit (the folder's time does not change) is seen.
    target = root / "django/utils/text.py"
    original = target.read_bytes()
    try:
        with open(target, "ab") as f:
            f.write(b"\ndef zqxj_fresh_bench_marker():\n    pass\n")
        out = subprocess.run([sift, "search", "--path", str(root), "--mode", "lexical", "--json",
                              "zqxj_fresh_bench_marker"], capture_output=True, text=True).stdout
        seen = "django/utils/text.py" in out
        print(f"in-place edit seen by the next search: {'yes' if seen else 'NO'}")
    finally:
        target.write_bytes(original)
        subprocess.run([sift, "index", "-q", "--path", str(root)], stdout=subprocess.DEVNULL)
    watched_ok = kept_watching(sift, root, a.runs)
    watcher_cost(sift, root)
    return 0 if seen and watched_ok else 1


def watcher_cost(sift, root):
    """rg's p50 without and with a watcher running, and the watcher's CPU per rg."""
    cmd = RG_BASE + ["-e", "QuerySet", str(root)]

    def cpu(pid):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    print("rg while a watcher runs (20 runs each way per round):")
    for _ in range(3):
        alone = statistics.median(timed(cmd) for _ in range(20))
        watcher = subprocess.Popen([sift, "index", "--watch", "-q", "--path", str(root)],
                                   stdout=subprocess.PIPE, text=True)
        try:
            watcher.stdout.readline()  # "watching …": the watches are in place
            time.sleep(1)
            before = cpu(watcher.pid)
            watched = statistics.median(timed(cmd) for _ in range(20))
            spent = (cpu(watcher.pid) - before) / 20
        finally:
            watcher.terminate()
            watcher.wait()
        print(f"  rg alone {alone * 1000:.1f} ms, with a watcher {watched * 1000:.1f} ms "
              f"({watched / alone:.2f}x); the watcher's CPU per rg {spent * 1000:.1f} ms")


def kept_watching(sift, root, runs):
    """The second phase: searches while a watcher left by the first one keeps the index fresh."""
    first = subprocess.run([sift, "search", "--path", str(root), "--keep-watching", "120",
                            "--mode", "lexical", "QuerySet"], capture_output=True, text=True)
    found = re.search(r"pid (\d+)", first.stderr)
    if not found:
        sys.exit(f"the first search left no watcher:\n{first.stderr}")
    pid = int(found.group(1))
    log = root / ".sift/logs/watch.log"
    deadline = time.time() + 60
    while "watching " not in (log.read_text() if log.exists() else ""):
        if time.time() > deadline:
            sys.exit(f"the watcher did not start; log: {log}")
        time.sleep(0.1)
    try:
        results = {}
        for mode in ("lexical", "hybrid"):
            m = ["--mode", mode] if mode == "lexical" else []
            variants = {
                "rg": lambda q: RG_BASE + [a for w in q.split() for a in ("-e", w)] + [str(root)],
                "kept watching": lambda q: [sift, "search", "--path", str(root),
                                            "--keep-watching", "120", *m, q],
            }
            samples = {v: [] for v in variants}
            for q in QUERIES:
                for i in range(runs + 1):
                    for v, cmd in variants.items():
                        dt = timed(cmd(q))
                        if i:
                            samples[v].append(dt)
            results[mode] = {v: statistics.median(s) for v, s in samples.items()}
        print(f"with a watcher left running by the first search (pid {pid}), interleaved with rg:")
        print_table(results, ("rg", "kept watching"))
        # The watcher, not a check, makes an in-place edit visible: within its latency.
        target = root / "django/utils/text.py"
        original = target.read_bytes()
        try:
            with open(target, "ab") as f:
                f.write(b"\ndef zqxj_watched_bench_marker():\n    pass\n")
            t0 = time.perf_counter()
            seen = None
            while time.perf_counter() - t0 < 2.0:
                out = subprocess.run([sift, "search", "--path", str(root), "--mode", "lexical",
                                      "--json", "zqxj_watched_bench_marker"],
                                     capture_output=True, text=True).stdout
                if "django/utils/text.py" in out:
                    seen = time.perf_counter() - t0
                    break
            print("in-place edit seen with the watcher: "
                  + (f"yes, {seen * 1000:.0f} ms after the write" if seen is not None else "NO (2 s)"))
        finally:
            target.write_bytes(original)
        return seen is not None
    finally:
        os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main())
