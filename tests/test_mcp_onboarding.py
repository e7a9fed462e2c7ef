"""The tpu-onboarding MCP server: in memory through the SDK's Client, then over stdio and HTTP as served."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp_types import ListRootsResult, ResourceLink, Root

from mcp_servers import all as all_servers
from mcp_servers._paths import AllowedFolders, PathNotAllowed, allowed_folders, confine
from mcp_servers._report_store import META_REPORT_ID, META_REPORT_URI
from mcp_servers.onboarding import build_server
from tests.conftest import REPO
from tests.mcp_support import SAFE_ENV, served_client, text_of
from tpu_runtime.cli.serve_cmd import ServeError, parse_http

EXAMPLE = REPO / "examples" / "tiny_gpt.py"

RAISING_MODEL = """
    import torch

    def get_model():
        raise RuntimeError("the weights are gone")

    def get_inputs():
        return (torch.zeros(2),)
"""


LINEAR_MODEL = """
    import torch

    def get_model():
        return torch.nn.Linear(8, 4)

    def get_inputs():
        return (torch.randn(2, 8),)
"""


@pytest.fixture
def roots_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Allow the repository and this test's folder (the fallback when the client sends no roots)."""
    monkeypatch.setenv("TPU_AGENT_ROOTS", os.pathsep.join([str(REPO), str(tmp_path)]))
    return tmp_path


# --- listing --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_lists_tools_with_annotations_and_output_schemas() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"onboard_model", "onboard_hf_config", "op_status"}
        for tool in tools.values():
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is True
            assert tool.annotations.open_world_hint is False
            assert tool.annotations.idempotent_hint is True
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        onboard = tools["onboard_model"]
        assert {"ops", "missing", "risks", "preflight", "numerics", "serving"} <= set(
            onboard.output_schema["properties"]  # type: ignore[index]
        )
        params = onboard.input_schema["properties"]
        assert set(params) == {"model_file", "entry", "batch", "seq", "numerics", "timeout_s"}
        assert onboard.input_schema["required"] == ["model_file"]
        assert "get_model()" in (onboard.description or "")
        assert {"status", "remedies", "op_table"} <= set(tools["op_status"].output_schema["properties"])  # type: ignore[index]
        hf_params = tools["onboard_hf_config"].input_schema
        assert hf_params["required"] == ["config_path"]
        assert {"batch", "seq", "dtype", "kv_cache_dtype"} <= set(hf_params["properties"])

        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["onboard-report://{report_id}"]
        prompts = (await client.list_prompts()).prompts
        assert [(p.name, [a.name for a in p.arguments or []]) for p in prompts] == [
            ("onboard", ["model_file"])
        ]


@pytest.mark.anyio
async def test_all_server_serves_every_specialist() -> None:
    server = all_servers.build_server()
    assert server.name == "tpu-agent"
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    expected: set[str] = set()
    for specialist in all_servers.specialist_modules():
        async with Client(specialist.build_server()) as client:
            expected |= {t.name for t in (await client.list_tools()).tools}
    assert {"onboard_model", "op_status"} <= names
    assert names == expected


@pytest.mark.anyio
async def test_prompt_is_the_playbook() -> None:
    async with Client(build_server()) as client:
        prompt = await client.get_prompt("onboard", {"model_file": "my_model.py"})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "my_model.py" in text
    assert "1. Run the model on CPU in a child process (time and memory limits, clean environment" in text
    assert "Proves: which ops are registered in torch_tpu" in text
    assert "Gate: runs only after the person approves" in text


# --- op_status ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_op_status() -> None:
    async with Client(build_server()) as client:
        nansum = await client.call_tool("op_status", {"op": "aten::nansum"})
        addmm = await client.call_tool("op_status", {"op": "addmm"})
    assert not nansum.is_error
    found = nansum.structured_content
    assert found["op"] == "aten::nansum" and found["status"] == "missing"
    kinds = [r["kind"] for r in found["remedies"]]
    assert kinds[0] == "rewrite" and "cpu_fallback" in kinds
    assert found["remedies"][0]["code"]
    assert "torch_tpu" in found["detail"] and found["op_table"]
    assert addmm.structured_content["op"] == "aten::addmm"
    assert addmm.structured_content["status"] == "supported"
    assert addmm.structured_content["remedies"] == []


# --- onboard_model --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_onboard_failure_then_success_with_progress_and_report_resource(
    roots_env: Path, write_model: Callable[[str, str], Path]
) -> None:
    bad = write_model(RAISING_MODEL, "broken.py")
    events: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    async with Client(build_server()) as client:
        failed = await client.call_tool("onboard_model", {"model_file": str(bad), "numerics": False})
        assert failed.is_error
        message = text_of(failed)
        assert "\n" not in message
        assert "RuntimeError" in message and "the weights are gone" in message

        # the server lives on: the next run of a good model succeeds
        result = await client.call_tool(
            "onboard_model",
            {"model_file": "examples/tiny_gpt.py", "numerics": False, "batch": 2},
            progress_callback=on_progress,
        )
        assert not result.is_error, text_of(result)
        report = result.structured_content
        assert report["model"]["file"].endswith("tiny_gpt.py")
        assert report["numerics"] is None
        assert report["preflight"]["breakdown"]["batch"] == 2
        assert any(o["op"] == "aten::addmm" for o in report["ops"])
        assert isinstance(report["missing"], list) and isinstance(report["risks"], list)
        assert any(r["op"] == "aten::nonzero" for r in report["risks"])

        # progress: strictly increasing, out of the workflow's six steps, ending at the total
        values = [p for p, _, _ in events]
        assert len(values) >= 3 and values == sorted(set(values))
        assert all(total == 6 for _, total, _ in events) and values[-1] == 6
        assert "child process (time and memory limits" in (events[0][2] or "")

        # the report id travels beside the report: _meta and a resource link
        assert result.meta is not None
        uri = result.meta[META_REPORT_URI]
        assert uri == f"onboard-report://{result.meta[META_REPORT_ID]}"
        links = [c for c in result.content if isinstance(c, ResourceLink)]
        assert [str(link.uri) for link in links] == [uri]
        read = await client.read_resource(uri)
        assert read.contents[0].mime_type == "application/json"
        assert '"schema_version": 1' in read.contents[0].text  # type: ignore[union-attr]

        with pytest.raises(MCPError, match="no onboard report"):
            await client.read_resource("onboard-report://999-nothing")


@pytest.mark.anyio
async def test_a_fault_of_the_runtime_is_one_line(roots_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tpu_runtime.onboard.job

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full\nsecond line")

    monkeypatch.setattr(tpu_runtime.onboard.job, "run_onboard", broken)
    async with Client(build_server()) as client:
        result = await client.call_tool("onboard_model", {"model_file": str(EXAMPLE)})
    assert result.is_error
    assert text_of(result) == "onboard_model failed inside tpu-agent: OSError: disk full"


@pytest.mark.slow
@pytest.mark.anyio
async def test_hf_config_outside_the_allowed_folders_or_broken(roots_env: Path) -> None:
    bad = roots_env / "config.json"
    bad.write_text('{"model_type": "no_such_architecture"}')
    async with Client(build_server()) as client:
        outside = await client.call_tool("onboard_hf_config", {"config_path": "/etc"})
        unknown = await client.call_tool("onboard_hf_config", {"config_path": str(roots_env)})
    assert outside.is_error and "outside the allowed folders" in text_of(outside)
    assert unknown.is_error and "no built-in architecture 'no_such_architecture'" in text_of(unknown)


@pytest.mark.anyio
async def test_paths_outside_the_allowed_folders_are_refused(roots_env: Path) -> None:
    async with Client(build_server()) as client:
        outside = await client.call_tool("onboard_model", {"model_file": "/etc/hostname"})
        missing = await client.call_tool("onboard_model", {"model_file": str(roots_env / "nope.py")})
    assert outside.is_error
    assert text_of(outside).startswith("/etc/hostname is outside the allowed folders: ")
    assert str(REPO) in text_of(outside) and "TPU_AGENT_ROOTS" in text_of(outside)
    assert missing.is_error and text_of(missing) == f"no such file: {roots_env.resolve() / 'nope.py'}"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 input-required round trip; roots/list
async def test_client_roots_take_precedence(roots_env: Path, mode: str) -> None:
    root = roots_env / "workspace"
    root.mkdir()

    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=root.as_uri(), name="workspace")])  # type: ignore[arg-type]

    async with Client(build_server(), list_roots_callback=list_roots, mode=mode) as client:
        outside = await client.call_tool("onboard_model", {"model_file": str(EXAMPLE)})
        relative = await client.call_tool("onboard_model", {"model_file": "model.py"})
    assert outside.is_error
    assert f"outside the allowed folders: {root.resolve()} (the MCP client's roots)" in text_of(outside)
    assert relative.is_error and text_of(relative) == f"no such file: {root.resolve() / 'model.py'}"


@pytest.mark.anyio
async def test_bad_arguments_are_errors_and_the_server_lives_on(roots_env: Path) -> None:
    async with Client(build_server()) as client:
        for arguments in (
            {"model_file": 5},
            {},
            {"model_file": str(EXAMPLE), "batch": 0},
            {"model_file": str(EXAMPLE), "batch": "many"},
            {"model_file": str(EXAMPLE), "timeout_s": -1},
            {"model_file": str(EXAMPLE), "entry": "not an entry"},
        ):
            result = await client.call_tool("onboard_model", arguments)
            assert result.is_error, arguments
        bad_op = await client.call_tool("op_status", {"op": ""})
        assert bad_op.is_error
        alive = await client.call_tool("op_status", {"op": "aten::mm"})
        assert not alive.is_error and alive.structured_content["status"] == "supported"


# --- path confinement and --http parsing (no server) ----------------------------------------------


def test_confine(tmp_path: Path) -> None:
    inside = tmp_path / "inside"
    inside.mkdir()
    (inside / "escape").symlink_to("/etc")
    allowed = AllowedFolders((inside.resolve(),), "test")
    assert confine("m.py", allowed) == inside.resolve() / "m.py"
    assert confine(str(inside / "sub" / "m.py"), allowed) == inside.resolve() / "sub" / "m.py"
    for bad in ("../m.py", str(inside / "escape" / "hostname"), "/etc/hostname"):
        with pytest.raises(PathNotAllowed, match="is outside the allowed folders"):
            confine(bad, allowed)


def test_allowed_folders_precedence(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    roots = ListRootsResult(roots=[Root(uri=a.as_uri())])  # type: ignore[arg-type]
    env = {"TPU_AGENT_ROOTS": f"{b}{os.pathsep}{a}"}
    assert allowed_folders(roots, env).folders == (a.resolve(),)
    assert allowed_folders(ListRootsResult(roots=[]), env).folders == (b.resolve(), a.resolve())
    assert allowed_folders(None, {}, cwd=tmp_path).folders == (tmp_path.resolve(),)


def test_parse_http() -> None:
    assert parse_http("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_http("[::1]:9000") == ("::1", 9000)
    for bad in ("8765", "host:", "host:0", "host:70000", ":80"):
        with pytest.raises(ServeError):
            parse_http(bad)


# --- as served: stdio and streamable HTTP ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_over_stdio(write_model: Callable[[str, str], Path]) -> None:
    model = write_model(LINEAR_MODEL, "linear.py")
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with served_client("onboarding", str(model.parent)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"onboard_model", "onboard_hf_config", "op_status"}
        status = await client.call_tool("op_status", {"op": "aten::nansum"})
        onboarded = await client.call_tool(
            "onboard_model", {"model_file": "linear.py", "numerics": False}, progress_callback=on_progress
        )
    assert status.structured_content["status"] == "missing"
    assert not onboarded.is_error, text_of(onboarded)
    assert onboarded.structured_content["model"]["class_name"] == "Linear"
    assert seen and seen[-1] == 6  # notifications/progress over the wire


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpu_runtime.cli.app", "serve", "onboarding", "--http", f"127.0.0.1:{port}"],
        cwd=REPO,
        env={**os.environ, **SAFE_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start within 30 s"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_over_streamable_http(http_server: str) -> None:
    async with Client(http_server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"onboard_model", "onboard_hf_config", "op_status"}
        result = await client.call_tool("op_status", {"op": "aten::addmm"})
    assert result.structured_content["status"] == "supported"
