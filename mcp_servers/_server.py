"""How every tpu-agent MCP server is built and served, so a specialist module declares only its tools."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

from tpu_runtime import __version__


def make_server(name: str, instructions: str, register: Callable[[MCPServer], None]) -> MCPServer:
    """A server with the suite's version and warnings-only logging (stdio carries the protocol), and the
    tools, resources and prompts `register` adds to it."""
    server = MCPServer(name, instructions=instructions, version=__version__, log_level="WARNING")
    register(server)
    return server


def serve_stdio(build_server: Callable[[], MCPServer]) -> None:
    """Serve a freshly built server over stdio, for `python -m mcp_servers.NAME` (what `tpu-agent serve
    NAME` does without --http)."""
    build_server().run("stdio")
