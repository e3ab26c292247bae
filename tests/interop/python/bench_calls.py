"""Times MCP tools/call round trips through the official Python SDK client
(the same transport as agent_loop.py) against a running `agent-task serve`.

Usage: bench_calls.py URL TOKEN_FILE CHANGE_ID RUNS

Connects once, then calls `qualification` RUNS times (after 3 warm-up
calls) and prints the median and 90th percentile per call in ms, one line.
Used by scripts/bench-hook.sh; prints figures, asserts nothing about time.
"""

import asyncio
import statistics
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def run(url, token, change, runs):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60.0) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            args = {"change_id": change}
            for _ in range(3):
                await client.call_tool("qualification", args)
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                r = await client.call_tool("qualification", args)
                times.append((time.perf_counter() - t0) * 1000.0)
                if r.is_error:
                    raise SystemExit(f"qualification failed: {r.structured_content}")
    times.sort()
    p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
    print(f"Python SDK tools/call qualification: median {statistics.median(times):.2f} ms, p90 {p90:.2f} ms, {runs} runs")


def main():
    url, token_file, change, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(token_file, encoding="utf-8") as f:
        token = f.read().strip()
    asyncio.run(run(url, token, change, runs))


if __name__ == "__main__":
    main()
