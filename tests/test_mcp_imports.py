"""Importing an MCP server loads no heavy library: each loads torch, JAX, the vector store or SSH only
when a tool needs it, so a client's start-up (which imports every server it lists) stays fast."""

from __future__ import annotations

import ast

import pytest

from tests.subprocess_support import python_output

TORCH_JAX = ("torch", "jax")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("modules", "heavy"),
    [
        (("mcp_servers.diagnostics",), TORCH_JAX),
        (("mcp_servers.kernels",), TORCH_JAX),
        (("mcp_servers.onboarding", "mcp_servers.all"), ("torch",)),
        (
            ("mcp_servers.knowledge", "mcp_servers.remote_runs", "mcp_servers.all"),
            ("torch", "chromadb", "bm25s", "asyncssh", "numpy", "jax"),
        ),
    ],
)
def test_importing_the_server_loads_no_heavy_library(
    modules: tuple[str, ...], heavy: tuple[str, ...]
) -> None:
    code = f"import sys, {', '.join(modules)}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    assert ast.literal_eval(python_output(code, timeout=60)) == []
