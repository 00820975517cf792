#!/usr/bin/env python3
"""Writes the part of GitHub's official OpenAPI description (npm @octokit/openapi) that the
pull-request bot calls: its paths, and every component they reach. Prism loads it in under a
second where the whole description (13 MB, 811 paths) takes about ten; any other endpoint
becomes a 404, so a call the bot should not make fails the test.

usage: openapi_subset.py SPEC OUT
"""
import json
import re
import sys

# Every endpoint sift_engine::github calls (engine/src/github/, engine/src/automate/).
PATHS = [
    "/user",
    "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
    "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
    "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
    "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions",
    "/repos/{owner}/{repo}/collaborators/{username}/permission",
    # sift automate's branch delivery (engine/src/automate/deliver.rs).
    "/repos/{owner}/{repo}/pulls",
    "/repos/{owner}/{repo}/pulls/{pull_number}",
]

spec_path, out_path = sys.argv[1], sys.argv[2]
with open(spec_path, encoding="utf-8") as f:
    spec = json.load(f)
missing = [p for p in PATHS if p not in spec["paths"]]
if missing:
    sys.exit(f"{spec_path} lacks {missing}")
spec["paths"] = {p: spec["paths"][p] for p in PATHS}
# Webhook descriptions refer to components this subset drops.
spec.pop("x-webhooks", None)
spec.pop("webhooks", None)
reached, todo = set(), [json.dumps(spec["paths"])]
while todo:
    for ref in re.findall(r'"#/components/([^/"]+)/([^"]+)"', todo.pop()):
        if ref not in reached:
            reached.add(ref)
            todo.append(json.dumps(spec["components"][ref[0]][ref[1]]))
spec["components"] = {
    kind: {name: v for name, v in items.items() if (kind, name) in reached}
    for kind, items in spec["components"].items()
}
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(spec, f)
print(f"{out_path}: {len(spec['paths'])} paths, {len(reached)} components")
