"""How every tpu-agent MCP server is built and served, so a specialist module declares only its tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer

from mcp_servers._results import tool_hints
from tpu_runtime import __version__

ToolFn = TypeVar("ToolFn", bound=Callable[..., Any])


def make_server(name: str, instructions: str, register: Callable[[MCPServer], None]) -> MCPServer:
    """A server with the suite's version and warnings-only logging (stdio carries the protocol), and the
    tools, resources and prompts `register` adds to it."""
    server = MCPServer(name, instructions=instructions, version=__version__, log_level="WARNING")
    register(server)
    return server


def declare_tool(
    server: MCPServer,
    name: str,
    title: str,
    description: str,
    *,
    read_only: bool = True,
    destructive: bool = False,
    idempotent: bool = True,
    open_world: bool = False,
    meta: dict[str, Any] | None = None,
) -> Callable[[ToolFn], ToolFn]:
    """`server.tool` with the title written once: clients show it both as the tool's title and in its
    hints (`tool_hints`, whose defaults describe a read-only tool that stays on this machine)."""
    hints = tool_hints(
        title, read_only=read_only, destructive=destructive, idempotent=idempotent, open_world=open_world
    )
    return server.tool(name=name, title=title, description=description, annotations=hints, meta=meta)


def serve_stdio(build_server: Callable[[], MCPServer]) -> None:
    """Serve a freshly built server over stdio, for `python -m mcp_servers.NAME` (what `tpu-agent serve
    NAME` does without --http)."""
    build_server().run("stdio")
