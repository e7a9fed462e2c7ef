"""The tpu-diagnostics MCP server, in memory through the SDK's Client (and once over stdio as served)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp import Client

from mcp_servers import all as all_servers
from mcp_servers.diagnostics import NAME, build_server
from tests.conftest import REPO, SHARED_FIXTURES
from tests.mcp_support import served_client, text_of
from tests.profiles_synth import load_space, scale_op, write_space
from tests.test_diagnose_detect import xspace_bytes
from tpu_runtime.cli.serve_cmd import server_modules
from tpu_runtime.diagnose.report import DiagnoseReport

DATA = REPO / "tests" / "data"
HBM_LOG = DATA / "crash_logs" / "hbm_oom" / "jax_train_step_compile.log"
VMEM_LOG = DATA / "crash_logs" / "vmem_oom" / "pallas_flash_scoped_vmem.log"
V6E = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"


@pytest.fixture
def roots_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Allow the repository, this test's folder and the shared fixtures (no client roots are sent)."""
    folders = [str(REPO), str(tmp_path), str(SHARED_FIXTURES)]
    monkeypatch.setenv("TPU_AGENT_ROOTS", os.pathsep.join(folders))
    return tmp_path


@pytest.mark.anyio
async def test_lists_read_only_tools_with_output_schemas() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"diagnose", "diagnose_log", "compare_profiles"}
    for tool in tools.values():
        notes = tool.annotations
        assert notes is not None and notes.title
        assert (notes.read_only_hint, notes.destructive_hint, notes.open_world_hint) == (True, False, False)
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    report_fields = set(DiagnoseReport.model_json_schema()["properties"])
    assert set(tools["diagnose"].output_schema["properties"]) == report_fields  # type: ignore[index]
    assert set(tools["diagnose_log"].output_schema["properties"]) == report_fields  # type: ignore[index]
    assert {"metrics", "ops", "summary"} <= set(tools["compare_profiles"].output_schema["properties"])  # type: ignore[index]
    diagnose = tools["diagnose"].input_schema
    assert set(diagnose["properties"]) == {"paths", "top", "compare"} and diagnose["required"] == ["paths"]
    assert tools["diagnose_log"].input_schema["required"] == ["text"]


def test_registered_for_serve_and_in_the_all_server() -> None:
    assert server_modules()["diagnostics"] == "mcp_servers.diagnostics"
    assert NAME in {module.NAME for module in all_servers.specialist_modules()}


@pytest.mark.anyio
async def test_diagnose_log_text_gives_the_category() -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool("diagnose_log", {"text": VMEM_LOG.read_text()})
        empty = await client.call_tool("diagnose_log", {"text": "   \n"})
    assert not result.is_error, text_of(result)
    crash = result.structured_content["crashes"][0]
    assert crash["category"] == "vmem_oom" and crash["source"] == "-"
    assert crash["fix"] and crash["citations"][0]["url"].startswith("https://")
    assert result.structured_content["findings"][0]["kind"] == "vmem_oom"
    assert empty.is_error and text_of(empty) == "-: empty input"


@pytest.mark.anyio
async def test_bad_paths_are_one_line_errors_and_the_server_keeps_working(roots_env: Path) -> None:
    empty = roots_env / "empty.log"
    empty.write_text("")
    cut = roots_env / "cut.xplane.pb"
    cut.write_bytes(xspace_bytes("/host:CPU", "/device:TPU:0")[:-11])
    async with Client(build_server()) as client:
        failures = {
            "outside": await client.call_tool("diagnose", {"paths": ["/etc/hostname"]}),
            "missing": await client.call_tool("diagnose", {"paths": [str(roots_env / "nope.log")]}),
            "empty": await client.call_tool("diagnose", {"paths": [str(empty)]}),
            "truncated": await client.call_tool("diagnose", {"paths": [str(cut)]}),
            "stdin": await client.call_tool("diagnose", {"paths": ["-"]}),
            "compare a log": await client.call_tool(
                "diagnose", {"paths": [str(HBM_LOG)], "compare": str(HBM_LOG)}
            ),
        }
        schema_errors = [  # refused by the SDK's argument check before the tool runs
            await client.call_tool("diagnose", {"paths": []}),
            await client.call_tool("diagnose", {"paths": [str(HBM_LOG)], "top": 0}),
            await client.call_tool("diagnose_log", {"text": ""}),
        ]
        alive = await client.call_tool(
            "diagnose", {"paths": ["tests/data/crash_logs/hbm_oom/" + HBM_LOG.name]}
        )
    assert all(result.is_error for result in schema_errors)
    for name, result in failures.items():
        assert result.is_error, name
        assert "\n" not in text_of(result).strip(), (name, text_of(result))
    assert text_of(failures["outside"]).startswith("/etc/hostname is outside the allowed folders: ")
    assert text_of(failures["missing"]) == f"{(roots_env / 'nope.log').resolve()}: no such file or folder"
    assert text_of(failures["empty"]).endswith("empty file")
    assert "truncated" in text_of(failures["truncated"])
    assert "diagnose_log" in text_of(failures["stdin"])
    assert "--compare takes an XProf profile" in text_of(failures["compare a log"])
    assert not alive.is_error, text_of(alive)
    assert alive.structured_content["crashes"][0]["category"] == "hbm_oom"


@pytest.mark.slow
@pytest.mark.anyio
async def test_compare_profiles_on_the_shared_fixture(roots_env: Path) -> None:
    if not V6E.is_file():
        pytest.skip(f"shared fixture {V6E} is absent (the shared/ folder beside the checkout)")
    space = load_space(V6E)
    assert scale_op(space, "broadcast_add_fusion.1", 2.0) == 400
    slowed = write_space(space, roots_env / "slow.xplane.pb")
    async with Client(build_server()) as client:
        both = await client.call_tool("diagnose", {"paths": [str(slowed)], "top": 5, "compare": str(V6E)})
        alone = await client.call_tool(
            "compare_profiles", {"before": str(V6E), "after": str(slowed), "top": 5}
        )
    assert not both.is_error and not alone.is_error, text_of(both) + text_of(alone)
    report = both.structured_content
    assert report["profile"]["is_tpu"] and len(report["profile"]["top_ops"]) == 5
    assert report["comparison"] == alone.structured_content
    first = alone.structured_content["ops"][0]
    assert first["name"] == "broadcast_add_fusion.1" and first["status"] == "slower"


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_diagnostics_over_stdio() -> None:
    async with served_client("diagnostics", str(DATA)) as client:
        result = await client.call_tool("diagnose", {"paths": [f"crash_logs/hbm_oom/{HBM_LOG.name}"]})
    assert not result.is_error, text_of(result)
    assert result.structured_content["crashes"][0]["category"] == "hbm_oom"
