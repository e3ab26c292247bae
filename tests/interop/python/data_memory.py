"""An agent's memory session against the data node's MCP endpoint
(`/v1/node/mcp` on `agent-task serve`) through the official MCP Python SDK
client, unchanged (its streamable-HTTP transport with the node bearer):
it stores three notes with collect_text, finds them again by a word with
query, reads one back with read_record and follows the change feed.

Usage: data_memory.py CONFIG_JSON
CONFIG_JSON holds url, token, mode (the SDK's connect mode: "legacy",
"auto" or "2026-07-28") and expect (the revision it must settle on).
Prints one JSON summary line (exit 0) or the failed check on stderr (exit 1).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_loop import CheckFailed, check, structured

NOTES = [
    ("build", "The nightly build of the osprey service fails when TZ is unset."),
    ("review", "Reviewers asked for the osprey retry budget to be halved."),
    ("deploy", "Deploys go out on Tuesdays after the standup."),
]


async def run(cfg):
    summary = {}
    headers = {"Authorization": f"Bearer {cfg['token']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60.0) as http:
        transport = streamable_http_client(cfg["url"], http_client=http)
        async with Client(transport, mode=cfg.get("mode", "auto")) as client:
            summary["protocol_version"] = client.protocol_version
            check(client.protocol_version == cfg["expect"], f"negotiated {client.protocol_version}")
            names = [t.name for t in (await client.list_tools()).tools]
            summary["tools"] = names
            ids = []
            for key, text in NOTES:
                r = structured(
                    await client.call_tool(
                        "collect_text",
                        {"collection_id": "default", "text": text, "key": key, "metadata": {"kind": "note"}},
                    ),
                    "collect_text",
                )
                check(r["inserted"] == 1, f"stored {r}")
                ids.append(r["records"][0]["id"])
            found = structured(await client.call_tool("query", {"text": "osprey", "limit": 10}), "query")
            hits = sorted(rec["record"]["id"] for rec in found["records"])
            check(hits == sorted(ids[:2]), f"osprey found {hits}, stored {ids}")
            summary["found_by_word"] = len(hits)
            notes = structured(
                await client.call_tool("query", {"where": {"metadata": {"kind": "note"}}}), "query where"
            )
            check(len(notes["records"]) == 3, f"where found {len(notes['records'])}")
            one = structured(await client.call_tool("read_record", {"record_id": ids[2]}), "read_record")
            check(one["content"]["data"] == NOTES[2][1], f"read back {one['content']}")
            feed = structured(await client.call_tool("changes", {"limit": 10}), "changes")
            check(len(feed["changes"]) == 3, f"feed {feed}")
            bad = await client.call_tool("collect_file", {"collection_id": "default", "path": "/etc/passwd"})
            check(bad.is_error and bad.structured_content["error"] == "invalid_file", f"outside the roots: {bad}")
            summary["stored"] = len(ids)
    return summary


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    try:
        summary = asyncio.run(run(cfg))
    except CheckFailed as e:
        print(f"check failed: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
