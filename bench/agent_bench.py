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

--suite reimplement: real functions re-implemented, checked by the project's own tests
(bench/eval/reimplement-tasks.jsonl, written by bench/eval/build_reimplement.py: public
functions more-itertools added between consecutive releases, each with the tests that name it
and a tuning/held-out split). Per task: the newer release's tree is copied to a temporary
folder, the function's body after its docstring becomes `raise NotImplementedError`, the
task's tests are run (they must fail), `sift index` runs, then `sift agent --apply --json`
is asked to implement it; success when the harness, outside sift, then runs the task's tests
with `python3 -m unittest` and they pass (test files the agent changed are restored first).
Backends: oracle (the endpoint replays the real body as one `edit`, then a `run` of the test
command in sift's sandbox, then answers: the pipeline, 100 % by construction), local,
endpoint. first-hit has no meaning here and is skipped.

Usage: agent_bench.py SIFT_BINARY TREES --suite reimplement [--n N] [--ids a,b]
       [--split tuning|held-out] [--backends oracle,local] [--json OUT]
  TREES: the folder of unpacked releases (bench/work/reimplement/src, from
  `build_reimplement.py --trees-only`).
"""

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "eval"))


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


def send_stream(handler, events, finish):
    """Answers the request as a streamed chat completion (SSE): `events`, then `finish`."""
    events = events + [{"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}]
    payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    data = payload.encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


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
        send_stream(self, events, finish)


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


# --- --suite reimplement ---------------------------------------------------------------------


def reimplement_tasks():
    with open(os.path.join(HERE, "eval", "reimplement-tasks.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def unittest_cmd(ids):
    return "python3 -m unittest " + " ".join(ids)


def reimplement_prompt(t):
    return (f"Implement {t['function']} in {t['file']} (its docstring says what it must do). "
            f"The project's tests {' '.join(t['tests'])} check it: run `{unittest_cmd(t['tests'])}`.")


class Replay(http.server.BaseHTTPRequestHandler):
    """The oracle for re-implementation: `edit` (stub -> the real body), `run` (the tests in
    sift's sandbox), then a text answer. `script` maps a task prompt to (path, old, new, cmd);
    `seen` keeps, per prompt, the tool answers the endpoint was sent."""

    script = {}
    seen = {}

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        user = "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
        prompt = next((p for p in self.script if p in user), None)
        tool_answers = [str(m.get("content") or "") for m in messages if m["role"] == "tool"]
        if prompt is not None:
            self.seen[prompt] = tool_answers
        call = None
        if prompt is not None and len(tool_answers) < 2:
            path, old, new, cmd = self.script[prompt]
            call = (("edit", {"path": path, "old_text": old, "new_text": new}) if not tool_answers
                    else ("run", {"command": cmd, "timeout_secs": 300}))
        if call:
            events = [{"choices": [{"index": 0, "delta": {"tool_calls": [{
                "index": 0, "id": f"c{len(tool_answers) + 1}", "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])}}]},
                "finish_reason": None}]}]
            finish = "tool_calls"
        else:
            answer = "Implemented it; the tests pass." if prompt else "Unknown task."
            events = [{"choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": None}]}]
            finish = "stop"
        send_stream(self, events, finish)


def run_tests(folder, ids):
    r = subprocess.run(["python3", "-m", "unittest", *ids], cwd=folder, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return r.returncode == 0, r.stderr.strip().splitlines()[-1:] or [""]


def snapshot(folder):
    """path -> bytes of every file under folder/tests."""
    out = {}
    for d, _, files in os.walk(os.path.join(folder, "tests")):
        for f in files:
            if not f.endswith(".pyc"):
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, folder)] = fh.read()
    return out


def reimplement_one(binary, trees, t, env, max_steps):
    """One task, in a fresh copy: (row dict, stubbed-file text for the oracle script)."""
    from build_reimplement import stub

    tmp = tempfile.mkdtemp(prefix="sift-reimpl-")
    try:
        folder = os.path.join(tmp, t["tree"])
        shutil.copytree(os.path.join(trees, t["tree"]), folder)
        path = os.path.join(folder, t["file"])
        with open(path) as f:
            stubbed, _, _ = stub(f.read(), t["function"])
        with open(path, "w") as f:
            f.write(stubbed)
        row = {"id": t["id"], "split": t["split"]}
        passed_before, _ = run_tests(folder, t["tests"])
        if passed_before:
            row.update(ok=False, stop="invalid", detail="the tests pass with the stub")
            return row
        tests_before = snapshot(folder)
        subprocess.run([binary, "index", folder], capture_output=True, env=env, check=True)
        started = time.time()
        r = subprocess.run([binary, "agent", "--path", folder, "--apply", "--json",
                            "--max-steps", str(max_steps), reimplement_prompt(t)],
                           capture_output=True, text=True, env=env, timeout=3600)
        row["seconds"] = time.time() - started
        try:
            result = json.loads(r.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            result = {"stop": "error", "answer": "", "detail": r.stderr.strip()[-300:]}
        after = snapshot(folder)
        touched = sorted(p for p in set(after) | set(tests_before)
                         if after.get(p) != tests_before.get(p))
        for p in touched:  # the agent's changes to tests do not count
            full = os.path.join(folder, p)
            if p in tests_before:
                with open(full, "wb") as fh:
                    fh.write(tests_before[p])
            else:
                os.remove(full)
        passed, last = run_tests(folder, t["tests"])
        with open(path) as f:
            changed = f.read() != stubbed
        row.update(ok=passed, stop=result.get("stop"), changed=changed, tests_touched=touched,
                   tests_last_line=last[0], answer=str(result.get("answer", ""))[:200])
        if "detail" in result:
            row["detail"] = result["detail"]
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def reimplement_main(binary, trees, opt):
    tasks = reimplement_tasks()
    if opt("--split", None):
        tasks = [t for t in tasks if t["split"] == opt("--split", None)]
    if opt("--ids", None):
        wanted = opt("--ids", "").split(",")
        tasks = [t for t in tasks if t["id"] in wanted or t["function"] in wanted]
    tasks = tasks[: int(opt("--n", str(len(tasks))))]
    backends = [b for b in opt("--backends", "oracle,local").split(",") if b != "first-hit"]
    if os.environ.get("SIFT_AGENT_BENCH_URL") and "endpoint" not in backends:
        backends.append("endpoint")
    from build_reimplement import stub

    config_home = tempfile.mkdtemp(prefix="sift-bench-config-")  # no user config leaks in
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_MODEL_")}
    base_env["XDG_CONFIG_HOME"] = config_home
    rows = []
    for backend in backends:
        env = dict(base_env)
        server = None
        if backend == "oracle":
            script = {}
            for t in tasks:
                with open(os.path.join(trees, t["tree"], t["file"])) as f:
                    _, old, new = stub(f.read(), t["function"])
                script[reimplement_prompt(t)] = (t["file"], old, new, unittest_cmd(t["tests"]))
            handler = type("R", (Replay,), {"script": script, "seen": {}})
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            env.update(SIFT_MODEL_BACKEND="openai", SIFT_MODEL_NAME="scripted-oracle",
                       SIFT_MODEL_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}/v1")
            max_steps, model = 5, "scripted oracle (replays the real body)"
        elif backend == "local":
            env.update(SIFT_MODEL_BACKEND="onnx")
            max_steps, model = 6, "Gemma 3 270M (base, local ONNX)"
        elif backend == "endpoint":
            env.update(SIFT_MODEL_BACKEND="openai", SIFT_MODEL_BASE_URL=os.environ["SIFT_AGENT_BENCH_URL"],
                       SIFT_MODEL_NAME=os.environ.get("SIFT_AGENT_BENCH_MODEL", ""))
            max_steps, model = 20, os.environ.get("SIFT_AGENT_BENCH_MODEL", "endpoint")
        else:
            raise SystemExit(f"unknown backend {backend}")
        per = []
        for t in tasks:
            row = reimplement_one(binary, trees, t, env, max_steps)
            if server:  # what sift's sandbox said when the oracle ran the tests
                seen = server.RequestHandlerClass.seen.get(reimplement_prompt(t), [])
                row["sandbox_run"] = seen[1].split("\n")[0] if len(seen) > 1 else "(no run answer)"
            per.append(row)
            print(f"  [{backend}] {t['id']} ({t['split']}): {'ok ' if row['ok'] else 'FAIL'} "
                  f"{row.get('stop')} {row.get('seconds', 0):.1f}s changed={row.get('changed')} "
                  f"tests: {row.get('tests_last_line', row.get('detail', ''))!r}"
                  + (f" sandbox: {row['sandbox_run']!r}" if "sandbox_run" in row else ""),
                  file=sys.stderr)
        if server:
            server.shutdown()
        times = sorted(r.get("seconds", 0) for r in per) or [0]
        rows.append({"backend": backend, "model": model, "tasks": len(per),
                     "ok": sum(r["ok"] for r in per),
                     "by_split": {s: [sum(r["ok"] for r in per if r["split"] == s),
                                      sum(r["split"] == s for r in per)]
                                  for s in ("tuning", "held-out")},
                     "median_s": times[len(times) // 2],
                     "stops": {s: sum(r.get("stop") == s for r in per)
                               for s in sorted({str(r.get("stop")) for r in per})},
                     "runs": per})
    shutil.rmtree(config_home, ignore_errors=True)
    versions = sorted({t["new_version"] for t in tasks}, key=lambda v: [int(x) for x in v.split(".")])
    print(f"agent task suite: {len(tasks)} re-implementation tasks (functions more-itertools added, "
          f"releases {versions[0] if versions else '-'}..{versions[-1] if versions else '-'}; "
          f"checked by its own unittest tests)")
    print(f"{'backend':<11}{'model':<42}{'success':>9}{'tuning':>9}{'held-out':>10}{'median s':>10}  stops")
    for r in rows:
        tu, ho = r["by_split"]["tuning"], r["by_split"]["held-out"]
        print(f"{r['backend']:<11}{r['model']:<42}{r['ok']:>4}/{r['tasks']:<4}"
              f"{tu[0]:>5}/{tu[1]:<3}{ho[0]:>6}/{ho[1]:<3}{r['median_s']:>10.1f}  {r['stops']}")
    if "--json" in sys.argv:
        with open(opt("--json", ""), "w") as f:
            json.dump(rows, f, indent=1)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    binary, root = sys.argv[1], sys.argv[2]
    opt = lambda name, default: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
    if opt("--suite", "where") == "reimplement":
        return reimplement_main(binary, root, opt)
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
