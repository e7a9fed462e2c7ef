"""`tpu-agent serve NAME [--http HOST:PORT]`: run one of the MCP servers in `mcp_servers/`.

stdio by default (what Claude Code and most MCP clients start); streamable HTTP at
`http://HOST:PORT/mcp` with `--http`. The names are the specialists registered in
`mcp_servers.all.SPECIALISTS` (onboarding, diagnostics, kernels, knowledge, runs) plus `all`, which serves
every specialist's tools on one server.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from tpu_runtime.errors import BadInput

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

HTTP_PATH = "/mcp"


class ServeError(BadInput, ValueError):
    """A bad server name or --http address; the message is one line."""


def server_modules() -> dict[str, str]:
    """Name -> module with `build_server()`, for every server `tpu-agent serve` knows."""
    from mcp_servers.all import SPECIALISTS

    return {**SPECIALISTS, "all": "mcp_servers.all"}


def build(name: str) -> MCPServer:
    modules = server_modules()
    if name not in modules:
        raise ServeError(f"no MCP server named {name!r}; choose one of: {', '.join(sorted(modules))}")
    server: MCPServer = importlib.import_module(modules[name]).build_server()
    return server


def parse_http(spec: str) -> tuple[str, int]:
    """'127.0.0.1:8765' / 'localhost:8765' / '[::1]:8765' -> (host, port)."""
    host, sep, port_text = spec.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ServeError(
            f"--http takes HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:8765; got {spec!r}"
        )
    return host, int(port_text)


def run_server(name: str, http: str | None = None) -> None:
    """Build the named server and serve it until the client disconnects or the process is stopped."""
    address = parse_http(http) if http is not None else None
    server = build(name)
    if address is None:
        server.run("stdio")
        return
    host, port = address
    shown = f"[{host}]" if ":" in host else host
    print(
        f"serving MCP server {server.name} at http://{shown}:{port}{HTTP_PATH}", file=sys.stderr, flush=True
    )
    server.run("streamable-http", host=host, port=port, streamable_http_path=HTTP_PATH)
