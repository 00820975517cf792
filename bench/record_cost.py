#!/usr/bin/env python3
"""record_cost.py: what recording the fate of a search costs a whole `sift search`, on one binary.

    python3 bench/record_cost.py --sift target/release/sift --corpus bench/work/quality-django [--pairs 30]

Runs `sift search --no-refresh --path CORPUS -k 10 QUERY` in interleaved pairs, with the
record of fates on (the default) and off (a user configuration file with `[feedback] record =
false`, through XDG_CONFIG_HOME), so the machine's load falls on both alike. CORPUS must be
indexed already (`sift index`). Prints the medians and the median of the paired ratios
on / off. A report: nothing is asserted. Only the standard library is used.
"""

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

QUERIES = [
    "where do we stop other sites from framing our pages",
    "get_object_or_404",
    "how are passwords hashed before they are stored",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sift", required=True)
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--pairs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as on_home, tempfile.TemporaryDirectory() as off_home:
        (Path(off_home) / "sift").mkdir()
        (Path(off_home) / "sift" / "config.toml").write_text("[feedback]\nrecord = false\n")

        def run(home: str, query: str) -> float:
            env = {"XDG_CONFIG_HOME": home, "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
            t = time.perf_counter()
            subprocess.run([args.sift, "search", "--no-refresh", "--path", str(args.corpus),
                            "-k", "10", query], env=env, check=True, capture_output=True)
            return time.perf_counter() - t

        for q in QUERIES:  # warm the page cache for both
            run(on_home, q)
            run(off_home, q)
        on, off, ratios = [], [], []
        for i in range(args.pairs):
            q = QUERIES[i % len(QUERIES)]
            first_on = i % 2 == 0
            a = run(on_home, q) if first_on else None
            b = run(off_home, q)
            a = a if a is not None else run(on_home, q)
            on.append(a)
            off.append(b)
            ratios.append(a / b)
    print(f"| `sift search`, {args.pairs} interleaved pairs | recording on | recording off | on / off (paired median) |")
    print("|---|---|---|---|")
    print(f"| p50 | {statistics.median(on) * 1000:.1f} ms | {statistics.median(off) * 1000:.1f} ms | "
          f"{statistics.median(ratios):.3f} |")


if __name__ == "__main__":
    main()
