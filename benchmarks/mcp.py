"""MCP servers: cold start to the first `tools/list` answer per server, and the overhead of a tool call.

Cold start: spawn `tpu-agent serve NAME` over stdio, initialize, list tools (the time an MCP client waits
before it can offer the tools). Tool-call overhead: `op_status` (a table lookup) over an open stdio
session and in memory, so the figure is the protocol's cost, not the tool's work.
Run by hand: `python benchmarks/mcp.py [--repeats N]`; the figures go into the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would shadow the `mcp` SDK.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
SERVERS = ["onboarding", "diagnostics", "kernels", "knowledge", "runs", "all"]
ENV = {**os.environ, "TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def _params(name: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tpu_runtime.cli.app", "serve", name], env=ENV, cwd=str(REPO)
    )


async def cold_start(name: str) -> tuple[float, int]:
    start = time.perf_counter()
    async with Client(_params(name), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        return time.perf_counter() - start, len(tools)


async def call_overhead(calls: int) -> tuple[float, float]:
    """Median seconds per op_status call over stdio and in memory."""
    from mcp_servers.onboarding import build_server

    async def timed(client: Client) -> float:
        await client.call_tool("op_status", {"op": "aten::addmm"})  # warm the op table
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("op_status", {"op": "aten::addmm"})
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    async with Client(_params("onboarding"), mode="legacy") as client:
        stdio = await timed(client)
    async with Client(build_server()) as client:
        memory = await timed(client)
    return stdio, memory


async def main(repeats: int) -> None:
    print(f"| server | tools | cold start to tools/list (median of {repeats}) |")
    print("|---|---:|---:|")
    for name in SERVERS:
        runs = [await cold_start(name) for _ in range(repeats)]
        print(f"| `{name}` | {runs[0][1]} | {statistics.median(r[0] for r in runs):.2f} s |")
    stdio, memory = await call_overhead(50)
    print(
        f"\nop_status call, median of 50: {stdio * 1000:.1f} ms over stdio, {memory * 1000:.2f} ms in memory"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    anyio.run(main, parser.parse_args().repeats)
