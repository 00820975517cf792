#!/usr/bin/env python3
"""The measuring half of bench/mcp-bench.sh: `sift mcp` on a Django copy, driven by the MCP
Python SDK as a real client would.

Starts the server on an already indexed copy, waits until a search says the index (and the
embedding pass, when a model is installed) is ready,
then runs each query of QUERIES through the `search` tool ROUNDS times, timing each call on the
client (send to answer), and the same queries as `rg -l -i` processes (the baseline a user
would otherwise reach for: one process per query over the same tree). Prints p50/p95 of both
and their ratio, and the size of the tool list (characters, about 4 per token).

Usage: mcp_bench.py SIFT_BINARY CORPUS [ROUNDS]
"""

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters, stdio_client

QUERIES = [
    "QuerySet", "get_object_or_404", "csrf token", "reverse url", "cache backend",
    "database migration", "model field validation", "template rendering", "session middleware",
    "password hashing", "form clean", "admin site register", "paginator", "signals post_save",
    "transaction atomic", "select_related", "json response", "static files finder",
    "timezone aware datetime", "email backend", "where are permissions checked",
    "how is the request body parsed", "sql compiler", "prefetch_related", "slugify",
    "file upload handler", "content types", "query expression", "url resolver", "test client",
]


def pct(values, p):
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return values[k]


async def measure(binary, corpus, rounds):
    params = StdioServerParameters(command=binary, args=["mcp", "--path", corpus], env=dict(os.environ))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                listed = sum(len(json.dumps(t.model_dump(by_alias=True, exclude_none=True))) for t in tools.tools)
                deadline = time.monotonic() + 600
                while True:
                    r = await session.call_tool("search", {"query": "QuerySet"})
                    cov = (r.structured_content or {}).get("coverage", {})
                    # Once indexed means the embeddings too: searches during the embedding pass
                    # share the CPU with it.
                    if cov.get("state") == "ready" and cov.get("embed_state") in ("ready", "off", "failed"):
                        break
                    if time.monotonic() > deadline:
                        sys.exit("the index never became ready")
                    await asyncio.sleep(0.5)
                times = []
                for _ in range(rounds):
                    for q in QUERIES:
                        start = time.perf_counter()
                        r = await session.call_tool("search", {"query": q})
                        times.append((time.perf_counter() - start) * 1000)
                        if r.is_error:
                            sys.exit(f"search {q!r} failed: {r.content}")
                return times, listed, cov


def main():
    binary, corpus = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    times, listed, cov = asyncio.run(measure(binary, corpus, rounds))
    rg = shutil.which("rg")
    rg_times = []
    if rg:
        for _ in range(rounds):
            for q in QUERIES:
                start = time.perf_counter()
                subprocess.run([rg, "-l", "-i", "-F", q, corpus], stdout=subprocess.DEVNULL, check=False)
                rg_times.append((time.perf_counter() - start) * 1000)
    print(f"corpus: {corpus} ({cov.get('files')} files, {cov.get('chunks')} chunks, embeddings: {cov.get('embed_state')})")
    print(f"{len(times)} calls of the `search` tool over MCP (stdio, MCP Python SDK client)")
    print(f"| | p50 ms | p95 ms |\n|---|---|---|")
    print(f"| sift mcp `search` | {pct(times, 50):.1f} | {pct(times, 95):.1f} |")
    if rg_times:
        print(f"| rg -l -i (one process per query) | {pct(rg_times, 50):.1f} | {pct(rg_times, 95):.1f} |")
        print(f"ratio sift/rg: p50 {pct(times, 50) / pct(rg_times, 50):.2f}, p95 {pct(times, 95) / pct(rg_times, 95):.2f}")
    else:
        print("(rg not installed: no baseline)")
    print(f"tool list: {listed} characters, about {listed // 4} tokens")


if __name__ == "__main__":
    main()
