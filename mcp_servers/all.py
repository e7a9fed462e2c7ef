"""The `tpu-agent` MCP server: every specialist's tools, resources and prompts on one connection.

For MCP clients that want one server instead of one per specialist. Each specialist module (see
`SPECIALISTS`) exposes `NAME`, `INSTRUCTIONS`, `register(server)` and `build_server()`; a new specialist
(diagnostics, kernels, knowledge, runs) adds itself by adding its module to `SPECIALISTS`, and is then
served here and by `tpu-agent serve <its name>`. Specialists must not reuse one another's tool,
resource or prompt names.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mcp.server.mcpserver import MCPServer

from mcp_servers._server import make_server, serve_stdio

NAME = "tpu-agent"

SPECIALISTS: dict[str, str] = {
    "onboarding": "mcp_servers.onboarding",
    "diagnostics": "mcp_servers.diagnostics",
    "kernels": "mcp_servers.kernels",
    "knowledge": "mcp_servers.knowledge",
    "runs": "mcp_servers.remote_runs",
}
"""`tpu-agent serve` name -> module exposing NAME, INSTRUCTIONS, register(server) and build_server()."""


def specialist_modules() -> list[ModuleType]:
    return [importlib.import_module(module) for module in SPECIALISTS.values()]


def register(server: MCPServer) -> None:
    """Register every specialist's tools, resources and prompts on `server`."""
    for module in specialist_modules():
        module.register(server)


def build_server() -> MCPServer:
    """A server named `tpu-agent` that serves all specialists' tools."""
    parts = [f"{module.NAME}: {module.INSTRUCTIONS}" for module in specialist_modules()]
    instructions = "Tools for moving PyTorch models onto Google Cloud TPUs.\n" + "\n".join(parts)
    return make_server(NAME, instructions, register)


if __name__ == "__main__":
    serve_stdio(build_server)
