"""MCP clients other than Claude Code: the shipped VS Code and Cursor configurations, and the MCP
Inspector's CLI mode as a real third-party client.

Each configuration is started the way the editor starts it (its `command` and `args` over stdio) and
must list the tools and answer `op_status`. The Inspector test runs when `TPU_AGENT_INSPECTOR_BIN` names
its executable or `mcp-inspector` is on PATH (npm `@modelcontextprotocol/inspector`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO

INSPECTOR_ENV = "TPU_AGENT_INSPECTOR_BIN"
SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
BIN_DIR = str(Path(sys.executable).parent)  # where `tpu-agent` is installed beside this Python


def _servers(config: str, key: str) -> dict[str, dict[str, Any]]:
    data = json.loads((REPO / "clients" / config / "mcp.json").read_text())
    assert set(data) == {key}, f"{config}: the top-level key must be {key!r}"
    servers: dict[str, dict[str, Any]] = data[key]
    assert servers
    return servers


async def _list_and_call(spec: dict[str, Any]) -> tuple[set[str], dict[str, Any]]:
    command = shutil.which(spec["command"], path=os.pathsep.join([BIN_DIR, os.environ.get("PATH", "")]))
    assert command is not None, f"{spec['command']} is not installed beside {sys.executable}"
    params = StdioServerParameters(
        command=command, args=spec.get("args", []), env={**SAFE_ENV, **spec.get("env", {})}, cwd=REPO
    )
    async with Client(params, mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        status = await client.call_tool("op_status", {"op": "aten::nansum"})
    assert not status.is_error
    assert status.structured_content is not None
    return names, status.structured_content


@pytest.mark.parametrize(("config", "key"), [("vscode", "servers"), ("cursor", "mcpServers")])
def test_client_config_starts_the_server(config: str, key: str) -> None:
    for name, spec in _servers(config, key).items():
        if config == "vscode":
            assert spec["type"] == "stdio", name
        assert isinstance(spec["command"], str) and all(isinstance(a, str) for a in spec.get("args", []))
        names, status = anyio.run(_list_and_call, spec)
        assert {"onboard_model", "op_status"} <= names
        assert status["op"] == "aten::nansum" and status["status"] == "missing"


def test_the_clients_readme_shows_both_configurations() -> None:
    readme = (REPO / "clients" / "README.md").read_text()
    for config in ("vscode", "cursor"):
        assert f"{config}/mcp.json" in readme
        spec = next(iter(_servers(config, "servers" if config == "vscode" else "mcpServers").values()))
        assert f"{spec['command']} {' '.join(spec['args'])}" in readme


def _inspector() -> str | None:
    named = os.environ.get(INSPECTOR_ENV)
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    return shutil.which("mcp-inspector")


needs_inspector = pytest.mark.skipif(
    _inspector() is None,
    reason=f"the MCP Inspector is not installed (npm install @modelcontextprotocol/inspector; put "
    f"mcp-inspector on PATH or set {INSPECTOR_ENV})",
)


def _run_inspector(*method: str) -> dict[str, Any]:
    inspector = _inspector()
    assert inspector is not None
    env = {**os.environ, **SAFE_ENV, "PATH": os.pathsep.join([BIN_DIR, os.environ.get("PATH", "")])}
    done = subprocess.run(
        [inspector, "--cli", "tpu-agent", "serve", "all", *method],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@needs_inspector
def test_inspector_lists_the_tools() -> None:
    listed = _run_inspector("--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {"onboard_model", "op_status"} <= set(tools)
    assert tools["op_status"]["annotations"]["readOnlyHint"] is True
    assert tools["onboard_model"]["inputSchema"]["required"] == ["model_file"]


@needs_inspector
def test_inspector_calls_op_status() -> None:
    called = _run_inspector(
        "--method", "tools/call", "--tool-name", "op_status", "--tool-arg", "op=aten::nansum"
    )
    assert called["isError"] is False
    assert called["structuredContent"]["status"] == "missing"
    assert called["structuredContent"]["remedies"][0]["kind"] == "rewrite"
