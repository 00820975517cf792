"""A real MCP client (the MCP Python SDK, `mcp` on PyPI) driving `sift mcp` over stdio.

Usage: python client.py SIFT_BINARY WORKSPACE REPORT.json

Starts the server as a client application would, runs every tool once (and a few calls that
must fail), and writes what it saw to REPORT.json for tests/tests/mcp.rs to judge. It judges
nothing itself, except that it gives up (exit 1) if the index never becomes ready.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def summary(result):
    """What a tool result carried: its text, its structured content, whether it failed."""
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return {
        "is_error": bool(result.is_error),
        "text": text,
        "structured": result.structured_content,
    }


async def main(binary, workspace, report_path):
    env = dict(os.environ)
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--path", workspace, "--allow-memory-add"],
        env=env,
    )
    report = {}
    with open(os.path.join(os.path.dirname(report_path), "server.log"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                report["protocol_version"] = init.protocol_version
                report["server_name"] = init.server_info.name
                tools = await session.list_tools()
                report["tools"] = [
                    {
                        "name": t.name,
                        "description": t.description,
                        "schema": t.input_schema,
                        "read_only": bool(t.annotations and t.annotations.read_only_hint),
                    }
                    for t in tools.tools
                ]

                # Indexing starts with the server: ask until the answer says it is ready.
                deadline = time.monotonic() + 60
                while True:
                    search = summary(await session.call_tool("search", {"query": "parse the configuration file"}))
                    coverage = (search["structured"] or {}).get("coverage", {})
                    if coverage.get("state") == "ready" and search["structured"]["results"]:
                        break
                    if time.monotonic() > deadline:
                        print("the index never became ready:", search, file=sys.stderr)
                        sys.exit(1)
                    await asyncio.sleep(0.2)
                report["search"] = search
                report["outline"] = summary(await session.call_tool("outline", {"path": "src/app.py"}))
                report["read"] = summary(
                    await session.call_tool("read", {"path": "src/app.py", "start_line": 1, "end_line": 3})
                )
                report["review"] = summary(await session.call_tool("review", {}))
                report["memory_add"] = summary(
                    await session.call_tool(
                        "memory_add",
                        {
                            "text": "Configuration is parsed once at start-up by parse_config; never re-read it per request.",
                            "cite": ["src/app.py#parse_config"],
                        },
                    )
                )
                report["memory_search"] = summary(
                    await session.call_tool("memory_search", {"query": "when is the configuration parsed"})
                )
                # Calls that must fail, each as a tool error the model can read.
                report["task_talk"] = summary(
                    await session.call_tool("memory_add", {"text": "I will fix the parser next, then run the tests."})
                )
                report["missing_argument"] = summary(await session.call_tool("search", {}))
                report["wrong_type"] = summary(await session.call_tool("read", {"path": 7}))
                report["outside"] = summary(await session.call_tool("read", {"path": "../outside.txt"}))
                report["secret"] = summary(await session.call_tool("read", {"path": ".env"}))
                try:
                    await session.call_tool("rm_rf", {})
                    report["unknown_tool"] = {"raised": False}
                except MCPError as e:
                    report["unknown_tool"] = {"raised": True, "message": e.error.message}
                # Still serving after all that.
                report["after"] = summary(await session.call_tool("outline", {"path": "src/app.py"}))
    with open(report_path, "w") as out:
        json.dump(report, out, indent=1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
