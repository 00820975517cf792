#!/usr/bin/env python3
"""ab_bench.py: two sift binaries side by side on one corpus, runs interleaved (A, B, A, B…) so
that the machine's load falls on both alike; reports medians and B/A ratios.

    python3 bench/ab_bench.py --a OLD_SIFT --b NEW_SIFT --corpus bench/work/django [--runs 5]

Measured for each binary:
  - cold index: `sift index DIR --quiet` on a fresh copy (lexical + embeddings with the default
    model): wall seconds and peak RSS (GNU time);
  - CLI search: `sift search --path DIR --json QUERY` (hybrid, the default; includes process
    start, the freshness walk and the model load), wall seconds per query;
  - in-server search: `sift lsp` on the indexed copy, `sift/search` round trips once the index
    and embeddings are ready (p50 / p95), and the server's peak RSS (VmHWM);
  - whether both give the same top-10 files per query (CLI), as a sanity check.

A report, not a test: nothing is asserted. Writes bench/work/ab-results.json and prints a table.
"""

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("lsp_bench", HERE / "lsp-bench.py")
lsp_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lsp_bench)

QUERIES = [
    "where are database migrations applied",
    "QuerySet.bulk_create",
    "how is the csrf token checked",
    "slugify",
    "send an email with attachments",
    "template variable resolution",
    "password hashing algorithm",
    "paginate a list of objects",
]


def timed(argv, env=None):
    """Runs argv under GNU time: (wall seconds, peak RSS bytes, stdout)."""
    with tempfile.NamedTemporaryFile("r") as stats:
        t0 = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", stats.name, *argv],
                             capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            raise SystemExit(f"{argv[0]} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
        rss = int(Path(stats.name).read_text().strip().splitlines()[-1]) * 1024
    return wall, rss, out.stdout


def cold_index(binary, corpus, work):
    dest = work / "cold"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(corpus, dest, ignore=shutil.ignore_patterns(".sift"))
    wall, rss, _ = timed([binary, "index", str(dest), "--quiet"])
    return wall, rss


def top_files(stdout):
    files = []
    for line in stdout.splitlines():
        path = json.loads(line)["path"]
        if path not in files:
            files.append(path)
    return files[:10]


def server_latency(binary, root, work, probes):
    client = lsp_bench.LspClient([binary, "lsp"], root, work / "ab-server.log", 120.0)
    try:
        uri = root.as_uri()
        client.request("initialize", {"processId": None, "capabilities": {},
                                      "workspaceFolders": [{"uri": uri, "name": "bench"}]})
        client.notify("initialized", {})
        deadline = time.time() + 600
        while True:
            status, _ = client.request("workspace/executeCommand", {"command": "sift.status"})
            ws = status["workspaces"][0] if status["workspaces"] else {}
            if ws.get("state") == "ready" and ws.get("embedState") in ("ready", "off"):
                break
            if time.time() > deadline:
                raise SystemExit(f"{binary}: the server was not ready in time: {status}")
            time.sleep(0.2)
        times = []
        for _ in range(probes):
            for q in QUERIES:
                _, dt = client.request("sift/search", {"query": q, "k": 10})
                times.append(dt)
        hwm = lsp_bench.proc_status(client.proc.pid).get("VmHWM", 0)
        client.request("shutdown", None)
        client.notify("exit", None)
        client.proc.wait(timeout=30)
        return times, hwm
    finally:
        client.close()


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the baseline sift binary")
    ap.add_argument("--b", required=True, help="the sift binary to compare")
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5, help="interleaved runs per measure")
    ap.add_argument("--probes", type=int, default=5, help="rounds of queries per server run")
    args = ap.parse_args()
    bins = {"a": str(Path(args.a).resolve()), "b": str(Path(args.b).resolve())}
    work = HERE / "work" / "ab"
    work.mkdir(parents=True, exist_ok=True)
    r = {k: {"index_s": [], "index_rss": [], "cli_s": [], "server_s": [], "server_rss": []}
         for k in bins}
    for i in range(args.runs):
        for k in ("a", "b") if i % 2 == 0 else ("b", "a"):
            wall, rss = cold_index(bins[k], args.corpus, work)
            r[k]["index_s"].append(wall)
            r[k]["index_rss"].append(rss)
            print(f"cold index {k} run {i + 1}: {wall:.2f} s, {rss / 2**20:.0f} MiB", file=sys.stderr)
    # One indexed copy per binary, so each searches an index it wrote.
    roots = {}
    for k in bins:
        roots[k] = work / f"indexed-{k}"
        if roots[k].exists():
            shutil.rmtree(roots[k])
        shutil.copytree(args.corpus, roots[k], ignore=shutil.ignore_patterns(".sift"))
        timed([bins[k], "index", str(roots[k]), "--quiet"])
    same = 0
    for i in range(args.runs):
        for q in QUERIES:
            tops = {}
            for k in ("a", "b") if i % 2 == 0 else ("b", "a"):
                wall, _, out = timed([bins[k], "search", "--path", str(roots[k]), "--json", q])
                r[k]["cli_s"].append(wall)
                tops[k] = top_files(out)
            same += tops["a"] == tops["b"]
    for i in range(max(2, args.runs // 2)):
        for k in ("a", "b") if i % 2 == 0 else ("b", "a"):
            times, hwm = server_latency(bins[k], roots[k], work, args.probes)
            r[k]["server_s"].extend(times)
            r[k]["server_rss"].append(hwm)
            print(f"server {k} run {i + 1}: p50 {med(times) * 1000:.1f} ms", file=sys.stderr)
    rows = []

    def row(what, key, unit, f):
        a, b = f(r["a"][key]), f(r["b"][key])
        rows.append((what, a, b, b / a if a else float("nan"), unit))

    row("cold index, wall (median)", "index_s", "s", med)
    row("cold index, peak RSS (median)", "index_rss", "MiB", lambda x: med(x) / 2**20)
    row("CLI hybrid search, wall (median)", "cli_s", "ms", lambda x: med(x) * 1000)
    row("in-server sift/search p50", "server_s", "ms", lambda x: lsp_bench.pct(x, 50) * 1000)
    row("in-server sift/search p95", "server_s", "ms", lambda x: lsp_bench.pct(x, 95) * 1000)
    row("server peak RSS (median)", "server_rss", "MiB", lambda x: med(x) / 2**20)
    total = args.runs * len(QUERIES)
    print(f"\ncorpus {args.corpus}, {lsp_bench.cpu_model()}, runs interleaved, {args.runs} per measure")
    print(f"A = {bins['a']}\nB = {bins['b']}\n")
    print(f"| measure | A | B | B/A |\n|---|---|---|---|")
    for what, a, b, ratio, unit in rows:
        print(f"| {what} | {a:.2f} {unit} | {b:.2f} {unit} | {ratio:.3f} |")
    print(f"\nsame top-10 files from the CLI: {same} of {total} query runs")
    out = {"a": bins["a"], "b": bins["b"], "corpus": str(args.corpus), "raw": r,
           "rows": [{"measure": w, "a": a, "b": b, "ratio": q, "unit": u} for w, a, b, q, u in rows],
           "same_top10": [same, total]}
    (HERE / "work" / "ab-results.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
