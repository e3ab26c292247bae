"""The agent-task claim loop through the official MCP Python SDK client
(same transport and bearer header as agent_loop.py): next, instructions,
reference, claim, heartbeat, result (an agent assertion built from the
claim), status, and an idempotency conflict coming back as isError.

Usage: agent_claim.py CONFIG_JSON
CONFIG_JSON holds url, token, change_id, task_id, criteria (criterion ids
of the task), reference (a reference name of the task), owner_id, agent_id.
Prints one JSON summary line (exit 0) or the failed check on stderr (exit 1).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_loop import CheckFailed, check, structured


async def run(cfg):
    summary = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {cfg['token']}"}, timeout=60.0) as http:
        async with Client(streamable_http_client(cfg["url"], http_client=http), mode=cfg.get("mode", "auto")) as client:
            summary["protocol_version"] = client.protocol_version
            task = cfg["task_id"]
            nxt = structured(await client.call_tool("next", {"change_id": cfg["change_id"]}), "next")
            check(nxt["next"] == {"operation": "claim", "task_id": task}, f"next: {nxt['next']}")
            ins = structured(await client.call_tool("instructions", {"task_id": task}), "instructions")
            ids = [c["id"] for c in ins["entrypoint"]["criteria"]]
            check(ids == cfg["criteria"], f"criteria {ids}")
            ref = structured(
                await client.call_tool("reference", {"task_id": task, "name": cfg["reference"]}), "reference"
            )
            check(ref["status"] == "available", f"reference: {ref}")

            claim = structured(
                await client.call_tool("claim", {"task_id": task, "request_id": "sdk-claim", "lease_ms": 60000}),
                "claim",
            )
            at = claim["attempt"]
            hb = structured(
                await client.call_tool(
                    "heartbeat", {"attempt_id": at["attempt_id"], "fence": at["fence"], "request_id": "sdk-hb"}
                ),
                "heartbeat",
            )
            check(hb["state"] == "leased", f"heartbeat: {hb}")

            # The same request id with another lease is an idempotency
            # conflict: a tool result with isError, not a protocol error.
            bad = await client.call_tool("claim", {"task_id": task, "request_id": "sdk-claim", "lease_ms": 50000})
            check(bad.is_error, f"a conflicting claim did not come back as isError: {bad}")
            summary["tool_error"] = bad.structured_content["error"]

            assertion = {
                "version": 1,
                "task_id": at["task_id"],
                "task_digest": at["task_digest"],
                "attempt_id": at["attempt_id"],
                "attempt_digest": claim["attempt_digest"],
                "request_id": "sdk-result",
                "execution_operation_id": at["execution_operation_id"],
                "agent": {"owner_id": cfg["owner_id"], "agent_id": cfg["agent_id"]},
                "executor": None,
                "fence": at["fence"],
                "trust_class": "agent_assertion",
                "outcome": "passed",
                "criteria": [
                    {"criterion": c, "outcome": "passed", "findings": ["checked"], "evidence_digests": []}
                    for c in cfg["criteria"]
                ],
                "executor_provenance": None,
            }
            res = structured(await client.call_tool("result", {"assertion": assertion}), "result")
            check(res["state"] == "finished", f"result: {res}")
            st = structured(
                await client.call_tool("status", {"task_id": task, "attempt_id": at["attempt_id"]}), "status"
            )
            check(st["state"] == "finished", f"status: {st}")
            summary["state"] = st["state"]
            summary["attempt_id"] = at["attempt_id"]
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
