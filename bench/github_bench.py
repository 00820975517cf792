#!/usr/bin/env python3
"""The pull-request bot on Django, as a CI job runs it: see bench/github-bench.sh.

The pull request: Django 5.1.4 (the PyPI wheel) with the last 50 lines of 5 of its modules cut
off in the base commit, put back by the head commit (250 added lines of real code in 5 files).
GitHub is a small stand-in on 127.0.0.1 (stdlib http.server) that keeps comments and reviews in
memory; the figures are sift's, not GitHub's latency.

Measured, interleaved, N runs each:
  cold:  no .sift/ at all (a runner without a cache): `sift index --no-embed` (what the model
         reviewer refreshes) and `sift review --post github --no-model`;
  warm:  .sift/ restored as the workflow's cache keeps it, built at the base commit: the same two
         commands (the index update reads the 5 changed files only);
  review alone: `sift review --post github --no-model` without any index (the rules-only bot
         does not read the index).
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from review_bench import download, git, make_repo, sources  # noqa: E402

TOKEN = "bench-token"


class StandIn(BaseHTTPRequestHandler):
    comments: list = []
    reviews: list = []

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        page = 1
        if "page=" in self.path:
            page = int(self.path.split("page=")[1].split("&")[0])
        if path == "/user":
            return self.answer(403, {"message": "Resource not accessible by integration"})
        if path.endswith("/comments"):
            return self.answer(200, self.comments[(page - 1) * 100: page * 100])
        if path.endswith("/reviews"):
            return self.answer(200, self.reviews[(page - 1) * 100: page * 100])
        return self.answer(404, {"message": "Not Found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        for c in body.get("comments", []):
            StandIn.comments.append({"id": 1000 + len(StandIn.comments), "body": c["body"],
                                     "path": c["path"], "line": c["line"],
                                     "user": {"login": "github-actions[bot]"}})
        review = {"id": len(StandIn.reviews) + 1, "body": body.get("body", ""),
                  "user": {"login": "github-actions[bot]"}}
        StandIn.reviews.append(review)
        self.answer(200, review)

    def do_PATCH(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cid = int(self.path.rstrip("/").split("/")[-1])
        for c in StandIn.comments:
            if c["id"] == cid:
                c["body"] = body["body"]
        self.answer(200, {"id": cid})


def pull_request(work: Path) -> tuple[Path, str, str]:
    """The repository (branch feature off main) and the base and head commits."""
    django = download(work, "pypi", "django", "5.1.4")
    repo = work / "github" / "django-pr"
    make_repo(repo, django, django)
    git(repo, "branch", "-M", "main")
    files = [p for p in sources(repo) if p.startswith("django/db/") and p.endswith(".py")]
    cut = []
    for rel in files:
        text = (repo / rel).read_text().splitlines(keepends=True)
        if len(text) >= 400:
            (repo / rel).write_text("".join(text[:-50]))
            cut.append((rel, text))
        if len(cut) == 5:
            break
    git(repo, "commit", "-q", "-am", "base: five modules cut short")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    for rel, text in cut:
        (repo / rel).write_text("".join(text))
    git(repo, "commit", "-q", "-am", "the pull request: put them back")
    head = git(repo, "rev-parse", "HEAD").strip()
    return repo, base, head


def timed(cmd, env, cwd) -> float:
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{cmd} failed ({out.returncode}): {out.stderr}")
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sift", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    repo, base, head = pull_request(args.work)
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    event = args.work / "github" / "event.json"
    event.write_text(json.dumps({"pull_request": {
        "number": 1, "base": {"sha": base, "repo": {"full_name": "o/r"}},
        "head": {"sha": head, "repo": {"full_name": "o/r"}}}}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(args.work / "github"),
           "SIFT_HOME": "/nonexistent/sift-bench", "GITHUB_EVENT_PATH": str(event),
           "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": TOKEN,
           "GITHUB_API_URL": f"http://127.0.0.1:{server.server_address[1]}"}
    index = [args.sift, "index", "--no-embed", "--quiet", "--path", str(repo)]
    review = [args.sift, "review", "--post", "github", "--no-model", "--format", "json",
              "--path", str(repo)]

    # The cache as the workflow keeps it: .sift/ built at the base commit.
    git(repo, "checkout", "-q", base)
    shutil.rmtree(repo / ".sift", ignore_errors=True)
    timed(index, env, repo)
    cache = args.work / "github" / "sift-cache"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(repo / ".sift", cache)
    git(repo, "checkout", "-q", "feature")

    results = {"cold": [], "warm": [], "review_only": []}
    for _ in range(args.runs):
        StandIn.comments.clear()
        StandIn.reviews.clear()
        shutil.rmtree(repo / ".sift", ignore_errors=True)
        results["cold"].append(timed(index, env, repo) + timed(review, env, repo))
        StandIn.comments.clear()
        StandIn.reviews.clear()
        shutil.rmtree(repo / ".sift", ignore_errors=True)
        shutil.copytree(cache, repo / ".sift")
        results["warm"].append(timed(index, env, repo) + timed(review, env, repo))
        StandIn.comments.clear()
        StandIn.reviews.clear()
        shutil.rmtree(repo / ".sift", ignore_errors=True)
        results["review_only"].append(timed(review, env, repo))
    posted = len(StandIn.comments)
    stat = git(repo, "diff", "--numstat", base, head)
    report = {
        "pull_request": {"files": len(stat.splitlines()),
                         "added_lines": sum(int(l.split()[0]) for l in stat.splitlines())},
        "comments_posted": posted,
        "runs": args.runs,
    }
    for name, times in results.items():
        report[name] = {"median_s": round(statistics.median(times), 3),
                        "min_s": round(min(times), 3), "max_s": round(max(times), 3)}
    report["warm_over_cold"] = round(report["warm"]["median_s"] / report["cold"]["median_s"], 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
