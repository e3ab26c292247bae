"""Drives `agent-task serve`'s workspace MCP endpoint with the official MCP
Python SDK (`mcp` on PyPI, pinned in requirements.txt), unchanged: the
SDK's streamable-HTTP client transport with the workspace bearer header.

Usage: agent_loop.py CONFIG_JSON

CONFIG_JSON (a file) holds:
  url          the MCP URL (…/v1/hub/workspace/mcp?repository=R&profile=P)
  token        the workspace bearer (agent token)
  change_id    the Change to qualify
  task_id      its command task (`tests`)
  collect      argv of `agent-task collect` without `--descriptor FILE`
  descriptor   where to write the claimed descriptor
  mode         the SDK's connect mode: "legacy" (initialize), "auto"
               (server/discover, falling back to initialize) or a modern
               revision to pin ("2026-07-28"); default "auto"
  expect       the revision the connection must settle on (default
               "2025-11-25")

It runs the demo loop through tools/call — capabilities, next,
instructions, qualification, collector_claim, collector_descriptor, the
local collector (uploading over HTTP), collector_finalize, qualification —
and checks that a failing operation comes back as a tool result with
isError. Every step is checked; on success it prints one JSON summary line
on stdout and exits 0, on the first failed check it prints the reason on
stderr and exits 1.
"""

import asyncio
import json
import subprocess
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def structured(result, name):
    """The structured answer of a successful tool call, checked against its text copy."""
    check(not result.is_error, f"{name}: unexpected isError: {result}")
    check(result.structured_content is not None, f"{name}: no structuredContent")
    check(len(result.content) >= 1 and result.content[0].type == "text", f"{name}: no text content")
    check(
        json.loads(result.content[0].text) == result.structured_content,
        f"{name}: the text copy differs from structuredContent",
    )
    return result.structured_content


async def run(cfg):
    summary = {}
    headers = {"Authorization": f"Bearer {cfg['token']}"}
    # The wire trace: what the SDK sent (HTTP method, MCP-Protocol-Version
    # header, JSON-RPC method) and the HTTP status it got back.
    trace = []
    summary["trace"] = trace

    async def on_response(response):
        req = response.request
        try:
            rpc = json.loads(req.content).get("method") if req.content else None
        except ValueError:
            rpc = None
        trace.append(
            {
                "http": req.method,
                "version_header": req.headers.get("mcp-protocol-version"),
                "rpc": rpc,
                "status": response.status_code,
            }
        )

    hooks = {"response": [on_response]}
    async with httpx2.AsyncClient(headers=headers, timeout=60.0, event_hooks=hooks) as http:
        transport = streamable_http_client(cfg["url"], http_client=http)
        async with Client(transport, mode=cfg.get("mode", "auto")) as client:
            summary["protocol_version"] = client.protocol_version
            expect = cfg.get("expect", "2025-11-25")
            check(client.protocol_version == expect, f"negotiated {client.protocol_version}, expected {expect}")
            if cfg.get("mode", "auto") in ("legacy", "auto"):
                # A pinned modern client adopts the revision without asking
                # (no server/discover, so no server info or capabilities).
                info = client.server_info
                check(info is not None and info.name == "agent-task", f"server info {info}")
                check(client.server_capabilities.tools is not None, "no tools capability")

            listed = await client.list_tools()
            names = [t.name for t in listed.tools]
            for t in listed.tools:
                schema = t.input_schema
                check(schema.get("type") == "object", f"{t.name}: inputSchema is not an object schema")
                check(isinstance(schema.get("properties"), dict), f"{t.name}: no properties")
            summary["tools"] = names

            caps = structured(await client.call_tool("capabilities", {}), "capabilities")
            check(caps["operations"] == names, f"tools {names} != operations {caps['operations']}")
            summary["capability"] = caps.get("capability")

            change = {"change_id": cfg["change_id"]}
            nxt = structured(await client.call_tool("next", change), "next")
            check(
                nxt["next"] == {"operation": "collector_claim", "task_id": cfg["task_id"]},
                f"next before the claim: {nxt['next']}",
            )
            ins = structured(await client.call_tool("instructions", {"task_id": cfg["task_id"]}), "instructions")
            check("entrypoint" in ins, "instructions without an entrypoint")
            q = structured(await client.call_tool("qualification", change), "qualification")
            check(q["qualified"] is False, "qualified before any work")

            claim = structured(
                await client.call_tool("collector_claim", {"task_id": cfg["task_id"], "request_id": "sdk-claim"}),
                "collector_claim",
            )
            attempt = claim["attempt"]["attempt_id"]
            again = structured(
                await client.call_tool("collector_descriptor", {"attempt_id": attempt}), "collector_descriptor"
            )
            check(again["descriptor"] == claim["descriptor"], "the descriptor changed between reads")

            # A failing operation is a tool result with isError, not a protocol error.
            bad = await client.call_tool(
                "collector_claim", {"task_id": cfg["task_id"], "request_id": "sdk-claim", "unexpected": 1}
            )
            check(bad.is_error, f"an invalid call did not come back as isError: {bad}")
            check(isinstance(bad.structured_content, dict) and "error" in bad.structured_content, "isError without an error object")
            summary["tool_error"] = bad.structured_content["error"]

            # An unknown tool is a JSON-RPC error.
            try:
                await client.call_tool("no_such_tool", {})
                raise CheckFailed("an unknown tool did not raise")
            except MCPError as e:
                summary["unknown_tool_code"] = e.code

            with open(cfg["descriptor"], "w", encoding="utf-8") as f:
                json.dump(claim["descriptor"], f)
            out = subprocess.run(
                cfg["collect"] + ["--descriptor", cfg["descriptor"]], capture_output=True, text=True, check=False
            )
            check(out.returncode == 0, f"collect failed: {out.stdout} {out.stderr}")
            collected = json.loads(out.stdout)
            check(collected.get("outcome") == "passed", f"collect outcome: {collected}")

            q = structured(await client.call_tool("qualification", change), "qualification")
            check(q["next"] == {"operation": "collector_finalize"}, f"next after collect: {q['next']}")
            fin = structured(await client.call_tool("collector_finalize", change), "collector_finalize")
            q = structured(await client.call_tool("qualification", change), "qualification")
            check(q["qualified"] is True, f"not qualified after finalize: {q}")
            check(q["receipt_digest"] == fin["receipt_digest"], "qualification names another receipt")
            summary["qualified"] = True
            summary["receipt_digest"] = q["receipt_digest"]
    return summary


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    try:
        summary = asyncio.run(run(cfg))
    except CheckFailed as e:
        print(f"check failed: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
