"""What the MCP server tests share: the child environment, a tool result's text, a served server and its
client."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import TextContent

from tests.conftest import REPO
from tpu_runtime.cli.serve_cmd import server_modules

#: The environment a served child needs here: no metadata-server query, JAX on the CPU, no torch backends.
SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def text_of(result: Any) -> str:
    """The text parts of a tool result, one per line (for assertion messages)."""
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def served(server: str, roots: str) -> StdioServerParameters:
    """`tpu-agent serve SERVER` over stdio from the checkout, allowed to read only `roots`."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tpu_runtime.cli.app", "serve", server],
        env={**SAFE_ENV, "TPU_AGENT_ROOTS": roots},
        cwd=REPO,
    )


@contextlib.asynccontextmanager
async def served_client(server: str, roots: str) -> AsyncIterator[Client]:
    """A client of `served(server, roots)` with the handshake Claude Code uses, once the server has
    introduced itself by its module's NAME."""
    async with Client(served(server, roots), mode="legacy") as client:
        name = importlib.import_module(server_modules()[server]).NAME
        assert client.server_info is not None and client.server_info.name == name
        yield client
