#!/usr/bin/env python3
"""The measuring half of bench/index-bench.sh (which prepares the binary and the corpora).

For each corpus: cold index under /usr/bin/time -v, no-op re-index, re-index after changing one
file, and the end-to-end latency of `sift search` (with and without --no-refresh) against `rg`.
With --ceiling (the parse_ceiling example), also the CPU time of tree-sitter parsing alone over
the same files: the most any indexer that parses them could reach, in MB per CPU-second.
Prints the results side by side and writes OUT/results.md and OUT/results.json.

Every `sift index` here runs with --no-embed and every `sift search` with --mode lexical: this
measures the lexical index and lexical search (embeddings and hybrid search have their own
benchmark, bench/embed-bench.sh), whether or not an embedding model is installed. (With a model
configured, a plain `sift search` loads it even when the index has no vectors yet: about 40 ms.)

Only the standard library is used. Timings are of whole processes (fork + exec + work + exit),
measured with time.perf_counter around subprocess.run; the page cache is warm for everything
except, possibly, the first cold index of a freshly prepared corpus.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

# --- what is measured, per corpus ----------------------------------------------------------------

QUERIES = {
    "django": [
        "QuerySet",
        "get_object_or_404",
        "csrf token",
        "middleware",
        "clickjacking",
        "select_related",
        "ValidationError",
        "migration autodetector",
        "cache key",
        "password hasher",
    ],
    "vendor": [
        "spawn_blocking",
        "Deserializer",
        "HashMap",
        "from_utf8",
        "read_to_end",
        "parse_duration",
        "thread pool",
        "Arc<Mutex",
        "impl Display for",
        "unsafe impl Send",
    ],
}

# The file changed for the one-file re-index (first glob that matches), and its comment syntax.
TOUCH = {
    "django": (["django/db/models/query.py"], "#"),
    "vendor": (["tokio-1.*/src/runtime/builder.rs", "*/src/lib.rs"], "//"),
}

# ripgrep as close to sift's walk as its flags allow: hidden files too (sift indexes them),
# the same 1 MiB size limit, and never sift's own .sift/ folder. Case-insensitive, fixed
# strings, and -l (list matching files: rg stops reading a file at its first match).
RG_BASE = ["rg", "-i", "-l", "-F", "--hidden", "--no-messages", "--max-filesize", "1M",
           "-g", "!.sift/"]

MB = 1_000_000  # all "MB" in the report are 10^6 bytes


# --- helpers -------------------------------------------------------------------------------------

def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return time.perf_counter() - t0, proc


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(samples)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def du_bytes(path: Path, exclude_sift: bool = False) -> int:
    cmd = ["du", "-sb"] + (["--exclude=.sift"] if exclude_sift else []) + [str(path)]
    return int(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()[0])


def count_files(path: Path) -> int:
    n = 0
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if d != ".sift"]
        n += len(filenames)
    return n


def parse_gnu_time(text: str) -> dict[str, float]:
    """The fields we need from `/usr/bin/time -v`."""
    out = {}
    for key, pattern in {
        "user_s": r"User time \(seconds\): ([\d.]+)",
        "sys_s": r"System time \(seconds\): ([\d.]+)",
        "max_rss_kb": r"Maximum resident set size \(kbytes\): (\d+)",
    }.items():
        m = re.search(pattern, text)
        if not m:
            raise RuntimeError(f"cannot find {key} in /usr/bin/time output:\n{text}")
        out[key] = float(m.group(1))
    m = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", text)
    if m:
        h, mnt, sec = m.groups()
        out["time_wall_s"] = int(h or 0) * 3600 + int(mnt) * 60 + float(sec)
    return out


def cpu_busy(seconds: float = 2.0) -> float | None:
    """The share of all CPUs busy over the next `seconds` (from /proc/stat), before we start."""
    def sample():
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total
    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f", {int(line.split()[1]) / 1024 / 1024:.0f} GiB RAM"
    except OSError:
        pass
    return f"{os.cpu_count()} × {cpu} (nproc {os.cpu_count()}){mem}, {platform.system()} {platform.release()}"


def fmt_ms(s: float) -> str:
    ms = s * 1000
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}"


def fmt_s(s: float) -> str:
    return f"{s:.2f}" if s < 10 else f"{s:.1f}"


# --- the measurements ----------------------------------------------------------------------------

class Bench:
    def __init__(self, sift: str, out: Path, runs: int, warmup: int, reindex_runs: int, rg_mode: str,
                 ceiling: str | None = None):
        self.sift = sift
        self.ceiling = ceiling
        self.out = out
        self.runs = runs
        self.warmup = warmup
        self.reindex_runs = reindex_runs
        self.rg_mode = rg_mode
        self.problems: list[str] = []
        self.backup_dir = out / "touch-backup"  # outside every corpus, so never indexed

    def problem(self, corpus: str, msg: str) -> None:
        say(f"  !! {corpus}: {msg}")
        self.problems.append(f"{corpus}: {msg}")

    def sift_index(self, corpus: str, root: Path, what: str) -> tuple[float, dict]:
        wall, proc = run_timed([self.sift, "index", str(root), "--json", "--quiet", "--no-embed"])
        if proc.returncode != 0:
            raise RuntimeError(f"sift index ({what}) exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}")
        if proc.stderr.strip():
            self.problem(corpus, f"sift index ({what}) wrote to stderr: {proc.stderr.decode(errors='replace').strip()[:500]}")
        return wall, json.loads(proc.stdout)

    # Restores a file left changed by an interrupted earlier run.
    def restore_leftovers(self, corpus: str, root: Path) -> None:
        saved = self.backup_dir / corpus
        if saved.is_file():
            rel = (self.backup_dir / f"{corpus}.path").read_text()
            shutil.copyfile(saved, root / rel)
            saved.unlink()
            say(f"  restored {rel}, left changed by an interrupted run")

    def corpus(self, name: str, root: Path) -> dict:
        say(f"\n--- corpus {name}: {root}")
        self.restore_leftovers(name, root)
        res: dict = {"name": name, "root": str(root)}

        # Size, as du and find see it (before .sift/ exists).
        shutil.rmtree(root / ".sift", ignore_errors=True)
        res["du_bytes"] = du_bytes(root)
        res["files_on_disk"] = count_files(root)
        say(f"  {res['files_on_disk']} files, {res['du_bytes'] / MB:.1f} MB (du -sb)")

        # Cold index: no .sift/ at all.
        timing = self.out / f"time-{name}.txt"
        cmd = ["/usr/bin/time", "-v", "-o", str(timing), self.sift, "index", str(root), "--json", "--quiet",
               "--no-embed"]
        say("  cold index ...")
        wall, proc = run_timed(cmd)
        if proc.returncode != 0:
            raise RuntimeError(f"cold sift index exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()}")
        if proc.stderr.strip():
            self.problem(name, f"cold sift index wrote to stderr: {proc.stderr.decode(errors='replace').strip()[:500]}")
        report = json.loads(proc.stdout)
        t = parse_gnu_time(timing.read_text())
        cpu = t["user_s"] + t["sys_s"]
        res["cold"] = {
            "wall_s": wall,
            "user_s": t["user_s"],
            "sys_s": t["sys_s"],
            "cpu_s": cpu,
            "max_rss_mb": t["max_rss_kb"] * 1024 / MB,
            "files_per_s": report["files_total"] / wall,
            "mb_per_cpu_s": report["bytes_read"] / MB / cpu if cpu else float("nan"),
            "mb_per_wall_s": report["bytes_read"] / MB / wall,
            "index_bytes": du_bytes(root / ".sift" / "index"),
            "report": report,
        }
        c = res["cold"]
        say(f"  cold: {wall:.2f} s wall, {cpu:.2f} s CPU, {c['max_rss_mb']:.0f} MB peak RSS, "
            f"{report['files_total']} files / {report['chunks_total']} chunks, "
            f"{report['bytes_read'] / MB:.1f} MB read, skipped {report['skipped']}, "
            f"commits {report.get('commits')}, index {c['index_bytes'] / MB:.1f} MB")
        if report["files_total"] == 0:
            self.problem(name, "the cold index holds no files")

        # The ceiling: tree-sitter parsing alone (and the chunker, and the tokenizer) over the
        # same files, one thread, files already in memory.
        if self.ceiling:
            say("  parse-only ceiling ...")
            proc = subprocess.run([self.ceiling, str(root), "--json"], capture_output=True)
            if proc.returncode != 0:
                self.problem(name, f"parse_ceiling exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[:500]}")
            else:
                ceil = json.loads(proc.stdout)
                res["ceiling"] = ceil
                say(f"  ceiling: {ceil['bytes'] / MB:.1f} MB ({ceil['parsed_bytes'] / MB:.1f} MB parsed); "
                    f"parse only {ceil['parse_cpu_s']:.2f} CPU-s = {ceil['parse_mb_per_cpu_s']:.1f} MB/CPU-s; "
                    f"chunk {ceil['chunk_mb_per_cpu_s']:.1f}, tokenize {ceil['tokenize_mb_per_cpu_s']:.1f}, "
                    f"read {ceil['read_mb_per_cpu_s']:.1f} MB/CPU-s; "
                    f"sift = {c['mb_per_cpu_s'] / ceil['parse_mb_per_cpu_s']:.0%} of parse-only")
                if ceil["bytes"] != report["bytes_read"]:
                    self.problem(name, f"parse_ceiling read {ceil['bytes']} bytes, sift index {report['bytes_read']}")

        # No-op re-index: nothing changed since the cold index.
        say(f"  no-op re-index x{self.reindex_runs} ...")
        walls = []
        for _ in range(self.reindex_runs):
            w, r = self.sift_index(name, root, "no-op")
            walls.append(w)
            if r["added"] or r["changed"] or r["removed"] or r["touched"] or r["chunks_written"]:
                self.problem(name, f"the no-op re-index did work: {r}")
        res["noop"] = {"median_s": statistics.median(walls), "runs_s": walls}

        # One file changed: append a comment line, re-index (timed), restore it, re-index (untimed).
        res["one_file"] = self.one_file(name, root)

        # sift re-reads a file whose mtime is within 2 s of a scan ("racily clean", as git does),
        # so the restored file would be re-hashed by the next few updates. Let it age, then settle
        # the index, so that the searches below start from a clean, quiet index.
        time.sleep(2.5)
        _, r = self.sift_index(name, root, "settle")
        res["settle_report"] = {k: r[k] for k in ("added", "changed", "removed", "touched", "commits")}
        _, r = self.sift_index(name, root, "settle")
        if r["added"] or r["changed"] or r["removed"] or r["touched"]:
            self.problem(name, f"the index did not settle after the one-file test: {r}")

        # Query latency.
        res["queries"] = self.queries(name, root)
        return res

    def one_file(self, name: str, root: Path) -> dict:
        patterns, comment = TOUCH[name]
        target = None
        for pattern in patterns:
            hits = sorted(glob.glob(pattern, root_dir=root))
            if hits:
                target = hits[0]
                break
        if target is None:
            self.problem(name, f"no file matches {patterns}; skipping the one-file re-index")
            return {}
        path = root / target
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        saved = self.backup_dir / name
        shutil.copyfile(path, saved)
        (self.backup_dir / f"{name}.path").write_text(target)
        original = saved.read_bytes()
        say(f"  one-file re-index x{self.reindex_runs} (appending a comment to {target}) ...")
        walls, restores, written = [], [], []
        try:
            for i in range(self.reindex_runs):
                path.write_bytes(original + f"\n{comment} sift-bench change {i} {time.time_ns()}\n".encode())
                w, r = self.sift_index(name, root, "one file changed")
                walls.append(w)
                written.append(r["chunks_written"])
                if r["changed"] != 1 or r["added"] or r["removed"]:
                    self.problem(name, f"one-file re-index reported {r['added']} added, "
                                       f"{r['changed']} changed, {r['removed']} removed (expected 0/1/0)")
                path.write_bytes(original)
                w, _ = self.sift_index(name, root, "restore")
                restores.append(w)
        finally:
            path.write_bytes(original)
            saved.unlink(missing_ok=True)
        return {"file": target, "median_s": statistics.median(walls), "runs_s": walls,
                "restore_median_s": statistics.median(restores), "chunks_written": written}

    def rg_cmd(self, query: str, root: Path) -> list[str]:
        words = query.split()
        if self.rg_mode == "phrase" or len(words) == 1:
            pats = ["-e", query]
        else:
            pats = [a for w in words for a in ("-e", w)]
        return RG_BASE + pats + [str(root)]

    def queries(self, name: str, root: Path) -> dict:
        tools = {
            "sift_norefresh": lambda q: [self.sift, "search", "--path", str(root), "--no-refresh", "-k", "10", "--json", "--mode", "lexical", q],
            "sift_refresh": lambda q: [self.sift, "search", "--path", str(root), "-k", "10", "--json", "--mode", "lexical", q],
            "rg": lambda q: self.rg_cmd(q, root),
        }
        samples: dict[str, list[float]] = {t: [] for t in tools}
        per_query = []
        say(f"  queries: {len(QUERIES[name])} x {len(tools)} tools x ({self.warmup} warm-up + {self.runs} runs) ...")
        for q in QUERIES[name]:
            row = {"query": q}
            for tool, make in tools.items():
                cmd = make(q)
                proc = None
                for _ in range(self.warmup):
                    _, proc = run_timed(cmd)
                walls, noisy = [], []
                for _ in range(self.runs):
                    w, proc = run_timed(cmd)
                    walls.append(w)
                    if tool.startswith("sift") and proc.stderr.strip():
                        noisy.append(proc.stderr.decode(errors="replace").strip())
                ok = proc.returncode == 0 or (tool == "rg" and proc.returncode == 1)  # rg: 1 = no match
                if not ok:
                    self.problem(name, f"{tool} {q!r} exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[:300]}")
                elif noisy:
                    # e.g. a refreshing search that found something to re-index in a quiet tree
                    self.problem(name, f"{tool} {q!r}: {len(noisy)} of {self.runs} timed runs wrote to stderr, "
                                       f"e.g. {noisy[0][:300]!r}")
                lines = len(proc.stdout.splitlines())
                if tool.startswith("sift") and lines == 0:
                    self.problem(name, f"{tool} {q!r}: no results")
                samples[tool].extend(walls)
                row[tool] = {"median_s": statistics.median(walls), "results": lines}
            per_query.append(row)
            say(f"    {q!r:28} sift --no-refresh {fmt_ms(row['sift_norefresh']['median_s']):>6} ms "
                f"({row['sift_norefresh']['results']} hits) | sift {fmt_ms(row['sift_refresh']['median_s']):>6} ms | "
                f"rg {fmt_ms(row['rg']['median_s']):>6} ms ({row['rg']['results']} files)")
        # A third way: a plain `sift search` while `sift index --watch` runs. The watcher holds
        # .sift/watch.lock, so the search trusts it and skips walking the tree.
        say("  queries with a live `sift index --watch` ...")
        watcher = subprocess.Popen([self.sift, "index", str(root), "--watch", "--quiet", "--no-embed"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            for line in watcher.stdout:
                if line.startswith("watching "):
                    break
            samples["sift_watched"] = []
            for q, row in zip(QUERIES[name], per_query):
                cmd = tools["sift_refresh"](q)
                for _ in range(self.warmup):
                    run_timed(cmd)
                walls = []
                for _ in range(self.runs):
                    w, proc = run_timed(cmd)
                    walls.append(w)
                samples["sift_watched"].extend(walls)
                row["sift_watched"] = {"median_s": statistics.median(walls), "results": len(proc.stdout.splitlines())}
        finally:
            watcher.kill()
            watcher.wait()
        summary = {t: {"p50_s": percentile(s, 50), "p95_s": percentile(s, 95), "n": len(s)} for t, s in samples.items()}
        for t in ("sift_norefresh", "sift_refresh", "sift_watched"):
            summary[t]["rg_over_sift_p50"] = summary["rg"]["p50_s"] / summary[t]["p50_s"]
            summary[t]["rg_over_sift_p95"] = summary["rg"]["p95_s"] / summary[t]["p95_s"]
        return {"summary": summary, "per_query": per_query}


# --- reporting -----------------------------------------------------------------------------------

def side_by_side(results: list[dict]) -> str:
    """Metrics as rows, corpora as columns."""
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, f) -> None:
        cells = []
        for r in results:
            try:
                cells.append(f(r))
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("-")
        rows.append((label, cells))

    add("files on disk / du -sb", lambda r: f"{r['files_on_disk']} / {r['du_bytes'] / MB:.1f} MB")
    add("files indexed / MB read", lambda r: f"{r['cold']['report']['files_total']} / {r['cold']['report']['bytes_read'] / MB:.1f} MB")
    add("chunks", lambda r: f"{r['cold']['report']['chunks_total']}")
    add("skipped bin/large/loop/unread", lambda r: "/".join(str(r['cold']['report']['skipped'][k]) for k in ("binary", "too_large", "symlink_loops", "unreadable")))
    add("cold index wall", lambda r: f"{fmt_s(r['cold']['wall_s'])} s")
    add("cold index CPU (user+sys)", lambda r: f"{fmt_s(r['cold']['cpu_s'])} s ({r['cold']['user_s']:.1f}+{r['cold']['sys_s']:.1f})")
    add("cold index CPU use (cores busy)", lambda r: f"{r['cold']['cpu_s'] / r['cold']['wall_s']:.2f}")
    add("cold index peak RSS", lambda r: f"{r['cold']['max_rss_mb']:.0f} MB")
    add("files/s (wall)", lambda r: f"{r['cold']['files_per_s']:.0f}")
    add("MB per CPU-second", lambda r: f"{r['cold']['mb_per_cpu_s']:.2f}")
    add("ceiling: tree-sitter parse only, MB per CPU-second", lambda r: f"{r['ceiling']['parse_mb_per_cpu_s']:.2f}")
    add("sift MB/CPU-s ÷ parse-only MB/CPU-s", lambda r: f"{r['cold']['mb_per_cpu_s'] / r['ceiling']['parse_mb_per_cpu_s']:.2f}")
    add("MB parsed by tree-sitter (rest: line windows)", lambda r: f"{r['ceiling']['parsed_bytes'] / MB:.1f} MB")
    add("chunker alone (parse + chunk), MB per CPU-second", lambda r: f"{r['ceiling']['chunk_mb_per_cpu_s']:.2f}")
    add("code tokenizer alone, MB per CPU-second", lambda r: f"{r['ceiling']['tokenize_mb_per_cpu_s']:.2f}")
    add("reading files alone, MB per CPU-second", lambda r: f"{r['ceiling']['read_mb_per_cpu_s']:.2f}")
    add("MB/s (wall)", lambda r: f"{r['cold']['mb_per_wall_s']:.2f}")
    add("index on disk", lambda r: f"{r['cold']['index_bytes'] / MB:.1f} MB")
    add("no-op re-index (median)", lambda r: f"{fmt_ms(r['noop']['median_s'])} ms")
    add("1-file re-index (median)", lambda r: f"{fmt_ms(r['one_file']['median_s'])} ms")
    for t, label in (("sift_norefresh", "sift search --no-refresh"), ("sift_refresh", "sift search (refresh)"),
                     ("sift_watched", "sift search, watcher running"), ("rg", "rg -i -l")):
        add(f"{label} p50 / p95", lambda r, t=t: f"{fmt_ms(r['queries']['summary'][t]['p50_s'])} / {fmt_ms(r['queries']['summary'][t]['p95_s'])} ms")
    add("rg/sift p50, --no-refresh", lambda r: f"{r['queries']['summary']['sift_norefresh']['rg_over_sift_p50']:.1f}x")
    add("rg/sift p50, refresh", lambda r: f"{r['queries']['summary']['sift_refresh']['rg_over_sift_p50']:.1f}x")
    add("rg/sift p50, watcher running", lambda r: f"{r['queries']['summary']['sift_watched']['rg_over_sift_p50']:.1f}x")

    header = ["metric"] + [r["name"] for r in results]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * len(results)) + "|"]
    for label, cells in rows:
        lines.append("| " + " | ".join([label] + cells) + " |")
    return "\n".join(lines)


def readme_table(results: list[dict]) -> str:
    """One row per corpus, for the README."""
    header = ["corpus", "files indexed / on disk", "MB indexed / du -sb", "cold index wall", "CPU s", "peak RSS", "files/s", "MB/CPU-s",
              "parse-only MB/CPU-s (sift ÷ it)", "index size", "no-op re-index", "1-file re-index",
              "search --no-refresh p50/p95", "search p50/p95", "search, watcher running p50/p95", "rg p50/p95",
              "rg/sift (no-refresh / refresh / watcher)"]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for r in results:
        if "queries" not in r:
            lines.append(f"| {r['name']} | failed: {r.get('error', '?')} |" + " |" * (len(header) - 2))
            continue
        c, s = r["cold"], r["queries"]["summary"]
        rep = c["report"]
        cells = [
            r["name"],
            f"{rep['files_total']} / {r['files_on_disk']}",
            f"{rep['bytes_read'] / MB:.0f} / {r['du_bytes'] / MB:.0f}",
            f"{fmt_s(c['wall_s'])} s",
            f"{fmt_s(c['cpu_s'])}",
            f"{c['max_rss_mb']:.0f} MB",
            f"{c['files_per_s']:.0f}",
            f"{c['mb_per_cpu_s']:.2f}",
            (f"{r['ceiling']['parse_mb_per_cpu_s']:.1f} ({c['mb_per_cpu_s'] / r['ceiling']['parse_mb_per_cpu_s']:.2f})"
             if "ceiling" in r else "-"),
            f"{c['index_bytes'] / MB:.0f} MB",
            f"{fmt_ms(r['noop']['median_s'])} ms",
            f"{fmt_ms(r['one_file']['median_s'])} ms" if r.get("one_file") else "-",
            f"{fmt_ms(s['sift_norefresh']['p50_s'])} / {fmt_ms(s['sift_norefresh']['p95_s'])} ms",
            f"{fmt_ms(s['sift_refresh']['p50_s'])} / {fmt_ms(s['sift_refresh']['p95_s'])} ms",
            f"{fmt_ms(s['sift_watched']['p50_s'])} / {fmt_ms(s['sift_watched']['p95_s'])} ms",
            f"{fmt_ms(s['rg']['p50_s'])} / {fmt_ms(s['rg']['p95_s'])} ms",
            f"{s['sift_norefresh']['rg_over_sift_p50']:.1f}x / {s['sift_refresh']['rg_over_sift_p50']:.1f}x"
            f" / {s['sift_watched']['rg_over_sift_p50']:.1f}x",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_query_table(r: dict) -> str:
    lines = [f"#### {r['name']}: per-query medians (ms; sift hits with -k 10, rg matching files)", "",
             "| query | sift --no-refresh | sift (refresh) | rg |", "|---|---:|---:|---:|"]
    for q in r["queries"]["per_query"]:
        lines.append(f"| `{q['query']}` | {fmt_ms(q['sift_norefresh']['median_s'])} ({q['sift_norefresh']['results']}) | "
                     f"{fmt_ms(q['sift_refresh']['median_s'])} ({q['sift_refresh']['results']}) | "
                     f"{fmt_ms(q['rg']['median_s'])} ({q['rg']['results']}) |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sift", required=True, help="the sift binary")
    ap.add_argument("--out", required=True, type=Path, help="where results.md/json go")
    ap.add_argument("--corpus", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--ceiling", help="the parse_ceiling example binary (tree-sitter parse-only rate)")
    args = ap.parse_args()

    runs = int(os.environ.get("BENCH_RUNS", "10"))
    warmup = int(os.environ.get("BENCH_WARMUP", "2"))
    reindex_runs = int(os.environ.get("BENCH_REINDEX_RUNS", "5"))
    rg_mode = os.environ.get("BENCH_RG_MODE", "words")
    if rg_mode not in ("words", "phrase"):
        raise SystemExit(f"BENCH_RG_MODE must be words or phrase, not {rg_mode!r}")

    bench = Bench(args.sift, args.out, runs, warmup, reindex_runs, rg_mode, args.ceiling)
    version = subprocess.run([args.sift, "--version"], capture_output=True, text=True).stdout.strip()
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=Path(__file__).resolve().parent).stdout.strip()
        rev += "-dirty" if dirty else ""
    except OSError:
        rev = "?"
    rg_version = subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.splitlines()[0]

    busy_start = cpu_busy()
    if busy_start is not None and busy_start > 0.15:
        say(f"warning: {busy_start:.0%} of the CPU is busy with something else; "
            "the numbers will be slower and noisier than on a quiet machine")
    results = []
    for spec in args.corpus:
        name, _, path = spec.partition("=")
        if name not in QUERIES:
            raise SystemExit(f"unknown corpus {name!r}")
        try:
            results.append(bench.corpus(name, Path(path).resolve()))
        except Exception as e:  # report it and go on with the next corpus
            bench.problem(name, f"FAILED: {e}")
            results.append({"name": name, "error": str(e)})

    ok = [r for r in results if "queries" in r]
    threads = os.environ.get("SIFT_THREADS", "default")
    rg_note = ("multi-word queries go to rg as an alternation of the words (`-F -e w1 -e w2`)"
               if rg_mode == "words" else "multi-word queries go to rg as the literal phrase")
    header = [
        "## sift index & search benchmark",
        "",
        f"- machine: {machine_line()}",
        f"- sift: {version}, checkout at git {rev}" + (" (SIFT_BIN was given: the binary may be older)"
                                                        if os.environ.get("SIFT_BIN") else "")
        + f"; SIFT_THREADS={threads}; {rg_version}",
        f"- CPU busy with other work just before the run: "
        f"{'unknown' if busy_start is None else f'{busy_start:.0%}'} (anything else running skews the numbers)",
        f"- date: {datetime.datetime.now().isoformat(timespec='minutes')}; "
        f"{runs} timed runs (+{warmup} warm-up) per query and tool, {reindex_runs} per re-index scenario",
        "- cold index: `sift index CORPUS --json --quiet --no-embed` (the lexical index; every `sift index` here "
        "has --no-embed) with no `.sift/`, under `/usr/bin/time -v`; MB = 10^6 bytes; MB/CPU-s = bytes read / (user+sys)",
        "- ceiling: `parse_ceiling CORPUS` (lsp/examples/parse_ceiling.rs): the same files read into memory, then "
        "tree-sitter parsing alone on one thread, with the same allocator as sift; parse-only MB/CPU-s = all bytes "
        "sift reads / parse CPU time (files sift cuts into line windows unparsed cost it nothing), so no indexer "
        "that parses them can go faster",
        "- search: whole processes, warm page cache; `sift search --path CORPUS [--no-refresh] -k 10 --json --mode lexical QUERY` "
        f"vs `{' '.join(RG_BASE)} -e QUERY CORPUS`; {rg_note}; p50/p95 pool all queries' runs; "
        "rg/sift = how many times faster sift is at p50",
    ]
    md = "\n".join(header) + "\n\n"
    if ok:
        md += readme_table(results) + "\n\n### Side by side\n\n" + side_by_side(ok) + "\n\n"
        md += "### Per query\n\n" + "\n\n".join(per_query_table(r) for r in ok) + "\n"
    if bench.problems:
        md += "\n### Problems seen\n\n" + "\n".join(f"- {p}" for p in bench.problems) + "\n"
    (args.out / "results.md").write_text(md)
    (args.out / "results.json").write_text(json.dumps(
        {"machine": machine_line(), "sift": version, "rev": rev, "results": results, "problems": bench.problems},
        indent=2))

    print()
    print("\n".join(header))
    if ok:
        print("\n### Side by side\n")
        print(side_by_side(ok))
        print("\n### README table\n")
        print(readme_table(results))
    if bench.problems:
        print("\n### Problems seen\n")
        print("\n".join(f"- {p}" for p in bench.problems))
    print(f"\n(written to {args.out / 'results.md'} and results.json)")
    return 1 if len(ok) < len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
