#!/usr/bin/env python3
"""The agent's task suite, per backend: "where is" questions over Django 5.1.4 with known
answers (bench/eval/django-questions.jsonl, hand-written from the source, and
bench/eval/django-fixes.jsonl, real fix commits -> the file they changed), asked through the
real `sift agent` binary. A run succeeds when its answer names a gold file.

Backends:
  oracle     a scripted endpoint on 127.0.0.1 that calls `search` and then answers the gold
             file: proves the pipeline (tools run, the answer reaches the output); 100 % by
             construction, anything less is a bug.
  first-hit  the same endpoint answering the first file of the search tool's result: what the
             simplest possible agent gets out of sift's index.
  local      the embedded local model (Gemma 3 270M base, `sift model install --llm`): its
             honest number.
  endpoint   a real OpenAI-compatible endpoint, when SIFT_AGENT_BENCH_URL (and optionally
             SIFT_AGENT_BENCH_MODEL) are set; an API key goes in the user's [model]
             api_key_env as for any sift command.

Usage: agent_bench.py SIFT_BINARY DJANGO_ROOT [--n N] [--backends a,b] [--json OUT]
"""

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def questions(n):
    out = []
    for name, kind in (("django-questions.jsonl", "question"), ("django-fixes.jsonl", "fix")):
        with open(os.path.join(HERE, "eval", name)) as f:
            items = [json.loads(l) for l in f if l.strip()]
        for item in items[: n // 2 if kind == "question" else n - n // 2]:
            if kind == "question":
                task = f"{item['q']}? Answer with the path of the file."
            else:
                first = item["q"].split("\n")[0]
                task = f"Which file would you change to fix this: {first} Answer with the path."
            out.append({"id": item["id"], "task": task, "gold": item["gold"]})
    return out


class Oracle(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that replays a fixed policy."""

    policy = "oracle"
    gold = {}

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        tool_answers = [m["content"] for m in messages if m["role"] == "tool"]
        if not tool_answers:
            events = [{"choices": [{"index": 0, "delta": {"tool_calls": [{
                "index": 0, "id": "c1", "type": "function",
                "function": {"name": "search", "arguments": json.dumps({"query": task})}}]},
                "finish_reason": None}]}]
            finish = "tool_calls"
        else:
            if self.policy == "oracle":
                answer = f"It is in {self.gold.get(task, ['?'])[0]}."
            else:
                m = re.search(r"^1\. ([^:\s]+):", tool_answers[-1], re.M)
                answer = f"It is in {m.group(1)}." if m else "I did not find it."
            events = [{"choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": None}]}]
            finish = "stop"
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(policy, gold):
    handler = type("H", (Oracle,), {"policy": policy, "gold": gold})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def ask(binary, root, task, env, max_steps):
    started = time.time()
    r = subprocess.run([binary, "agent", "--path", root, "--json", "--max-steps", str(max_steps), task],
                       capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.time() - started
    try:
        result = json.loads(r.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        result = {"stop": "error", "answer": "", "detail": r.stderr.strip()[-300:]}
    return result, elapsed


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    binary, root = sys.argv[1], sys.argv[2]
    opt = lambda name, default: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
    n = int(opt("--n", "10"))
    backends = opt("--backends", "oracle,first-hit,local").split(",")
    if os.environ.get("SIFT_AGENT_BENCH_URL") and "endpoint" not in backends:
        backends.append("endpoint")
    items = questions(n)
    gold = {it["task"]: it["gold"] for it in items}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_MODEL_")}
    rows = []
    for backend in backends:
        env = dict(base_env)
        server = None
        if backend in ("oracle", "first-hit"):
            server = serve(backend, gold)
            env.update(SIFT_MODEL_BACKEND="openai", SIFT_MODEL_NAME=f"scripted-{backend}",
                       SIFT_MODEL_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}/v1")
            max_steps, model = 4, f"scripted {backend} policy"
        elif backend == "local":
            env.update(SIFT_MODEL_BACKEND="onnx")
            max_steps, model = 3, "Gemma 3 270M (base, local ONNX)"
        else:
            env.update(SIFT_MODEL_BACKEND="openai", SIFT_MODEL_BASE_URL=os.environ["SIFT_AGENT_BENCH_URL"],
                       SIFT_MODEL_NAME=os.environ.get("SIFT_AGENT_BENCH_MODEL", ""))
            max_steps, model = 10, os.environ.get("SIFT_AGENT_BENCH_MODEL", "endpoint")
        ok, times, stops = 0, [], {}
        for it in items:
            result, elapsed = ask(binary, root, it["task"], env, max_steps)
            hit = any(g in result.get("answer", "") for g in it["gold"])
            ok += hit
            times.append(elapsed)
            stops[result.get("stop", "?")] = stops.get(result.get("stop", "?"), 0) + 1
            print(f"  [{backend}] {it['id']}: {'ok ' if hit else 'MISS'} {result.get('stop')} "
                  f"{elapsed:.1f}s {result.get('answer', '')[:80]!r}", file=sys.stderr)
        if server:
            server.shutdown()
        times.sort()
        rows.append({"backend": backend, "model": model, "tasks": len(items), "ok": ok,
                     "median_s": times[len(times) // 2], "stops": stops})
    print(f"agent task suite: {len(items)} 'where is' tasks over Django 5.1.4 "
          f"({n // 2} plain questions, {n - n // 2} fix commits)")
    print(f"{'backend':<11}{'model':<36}{'success':>9}{'median s':>10}  stops")
    for r in rows:
        print(f"{r['backend']:<11}{r['model']:<36}{r['ok']:>4}/{r['tasks']:<4}{r['median_s']:>10.1f}  {r['stops']}")
    if "--json" in sys.argv:
        with open(opt("--json", ""), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
