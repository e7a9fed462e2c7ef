"""The tpu-kernels MCP server, in memory through the SDK's Client (and once over stdio as served).

Kept fast like tests/test_kernels_*.py: one generation, only the stages each case is about, small shapes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp import Client
from mcp_types import TextContent

from mcp_servers import all as all_servers
from mcp_servers.kernels import CHECK_STAGES, NAME, KernelTemplate, NewKernel, build_server
from tests.conftest import REPO
from tests.mcp_support import served_client, text_of
from tpu_runtime.cli.serve_cmd import server_modules
from tpu_runtime.kernels.report import CPU_STAGES, KernelCheckReport, TuneReport
from tpu_runtime.kernels.runlog import RunFolder
from tpu_runtime.kernels.scaffold import list_templates

KERNELS = REPO / "tests" / "data" / "kernels"
TOOLS = {"kernel_templates", "new_kernel", "check_kernel", "tune_kernel"}

Events = list[tuple[float, float | None, str | None]]


@pytest.fixture
def roots_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Allow this test's folder (first, so relative paths start there) and the planted-bug kernels."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("TPU_AGENT_ROOTS", os.pathsep.join([str(work), str(KERNELS)]))
    return work


def _recorder() -> tuple[Events, Any]:
    events: Events = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    return events, on_progress


def _one_line_error(result: Any) -> str:
    assert result.is_error, text_of(result)
    text = text_of(result)
    assert text and "\n" not in text.strip(), text
    return text


@pytest.mark.anyio
async def test_lists_tools_with_annotations_and_output_schemas() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        playbook = await client.get_prompt("kernel", {"goal": "a fused RMSNorm"})
    assert set(tools) == TOOLS
    hints = {
        name: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.open_world_hint)
        for name, t in tools.items()
        if t.annotations is not None and t.annotations.title
    }
    assert hints == {
        "kernel_templates": (True, False, False),
        "check_kernel": (True, False, False),
        "new_kernel": (False, True, False),  # force=true overwrites a file
        "tune_kernel": (False, False, False),  # writes only its own run folder
    }
    schemas = {name: t.output_schema or {} for name, t in tools.items()}
    assert set(schemas["check_kernel"]["properties"]) == set(
        KernelCheckReport.model_json_schema()["properties"]
    )
    assert set(schemas["tune_kernel"]["properties"]) == set(TuneReport.model_json_schema()["properties"])
    assert set(schemas["new_kernel"]["properties"]) == set(NewKernel.model_json_schema()["properties"])
    assert schemas["kernel_templates"]["properties"]["result"]["type"] == "array"
    required = {name: sorted(t.input_schema.get("required", [])) for name, t in tools.items()}
    assert required == {
        "kernel_templates": [],
        "new_kernel": ["name", "template"],
        "check_kernel": ["path"],
        "tune_kernel": ["budget", "path"],
    }
    check_inputs = tools["check_kernel"].input_schema["properties"]
    assert check_inputs["generations"]["default"] == ["v6e"]
    assert check_inputs["stages"]["default"] == list(CPU_STAGES) == list(CHECK_STAGES)
    assert "roots" not in check_inputs and "ctx" not in check_inputs  # filled by the SDK, not the model
    assert prompts == {"kernel"}
    text = "\n".join(m.content.text for m in playbook.messages if isinstance(m.content, TextContent))
    assert "a fused RMSNorm" in text and "workflows/kernel.yaml" in text and "approves" in text


@pytest.mark.anyio
async def test_registered_for_serve_for_claude_code_and_in_the_all_server() -> None:
    assert server_modules()["kernels"] == "mcp_servers.kernels"
    assert NAME in {module.NAME for module in all_servers.specialist_modules()}
    spec = json.loads((REPO / ".mcp.json").read_text())["mcpServers"][NAME]
    assert spec["args"] == ["serve", "kernels"]
    async with Client(all_servers.build_server()) as client:
        served = {t.name for t in (await client.list_tools()).tools}
    assert served >= TOOLS
    allowlist = (REPO / "agents" / "tpu-kernel-development.md").read_text()
    for tool in TOOLS:
        assert f"mcp__{NAME}__{tool}" in allowlist and f"mcp__plugin_tpu-agent_{NAME}__{tool}" in allowlist


@pytest.mark.anyio
async def test_templates_and_new_kernel_stay_inside_the_allowed_folders(roots_env: Path) -> None:
    async with Client(build_server()) as client:
        listed = await client.call_tool("kernel_templates", {})
        created = await client.call_tool("new_kernel", {"name": "my_norm", "template": "rmsnorm"})
        target = roots_env / "my_norm.py"
        target.write_text(target.read_text() + "\n# my edit\n")
        again = await client.call_tool("new_kernel", {"name": "my_norm", "template": "rmsnorm"})
        edited = target.read_text()
        forced = await client.call_tool(
            "new_kernel", {"name": "my_norm", "template": "softmax", "force": True}
        )
        nested = await client.call_tool(
            "new_kernel", {"name": "mm", "template": "matmul", "folder": "kernels/ops"}
        )
        refused = {
            "absolute": await client.call_tool(
                "new_kernel", {"name": "evil", "template": "matmul", "folder": str(roots_env.parent)}
            ),
            "relative": await client.call_tool(
                "new_kernel", {"name": "evil", "template": "matmul", "folder": "../.."}
            ),
            "name": await client.call_tool("new_kernel", {"name": "../evil", "template": "matmul"}),
            "template": await client.call_tool("new_kernel", {"name": "x", "template": "conv3d"}),
        }
    assert not listed.is_error, text_of(listed)
    templates = [KernelTemplate.model_validate(t) for t in listed.structured_content["result"]]  # type: ignore[index]
    assert [t.name for t in templates] == [t.name for t in list_templates()]
    assert {"matmul", "matmul_bf16", "int8_matmul", "rmsnorm", "softmax", "flash_attention"} <= {
        t.name for t in templates
    }
    assert all(t.summary for t in templates)

    assert not created.is_error, text_of(created)
    made = NewKernel.model_validate(created.structured_content)
    assert made.file == str(target) and not made.overwritten
    assert "reference(" in made.convention and str(target) in made.next_step
    rmsnorm = (REPO / "tpu_runtime" / "kernels" / "templates" / "rmsnorm.py").read_text()
    assert rmsnorm in edited and edited.endswith("# my edit\n")  # the refused call left the edit alone
    assert "already exists" in _one_line_error(again) and "force=true" in text_of(again)
    assert not forced.is_error and NewKernel.model_validate(forced.structured_content).overwritten
    softmax = (REPO / "tpu_runtime" / "kernels" / "templates" / "softmax.py").read_text()
    assert softmax in target.read_text() and "# my edit" not in target.read_text()
    assert not nested.is_error and (roots_env / "kernels" / "ops" / "mm.py").is_file()

    assert "is outside the allowed folders" in _one_line_error(refused["absolute"])
    assert "is outside the allowed folders" in _one_line_error(refused["relative"])
    assert "must be a Python identifier" in _one_line_error(refused["name"])
    assert "unknown template 'conv3d'" in _one_line_error(refused["template"])
    assert sorted(p.name for p in roots_env.parent.iterdir()) == ["work"]  # nothing written outside


@pytest.mark.slow
@pytest.mark.anyio
async def test_check_kernel_passes_a_new_template_and_reports_progress_per_stage(roots_env: Path) -> None:
    events, on_progress = _recorder()
    stages = ["correctness", "honesty", "lowering", "compile", "torch"]
    async with Client(build_server()) as client:
        created = await client.call_tool("new_kernel", {"name": "mm", "template": "matmul"})
        assert not created.is_error, text_of(created)
        result = await client.call_tool(
            "check_kernel",
            {
                "path": "mm.py",
                "generations": ["v6e"],
                "stages": stages,
                "shapes": [{"m": 128, "k": 128, "n": 256}],
                "target_shape": {"m": 512, "k": 512, "n": 512},
            },
            progress_callback=on_progress,
        )
    assert not result.is_error, text_of(result)
    report = KernelCheckReport.model_validate(result.structured_content)
    assert report.file == str(roots_env / "mm.py") and report.shapes == [{"m": 128, "k": 128, "n": 256}]
    assert {s.stage: s.verdict for s in report.stages} == {
        **dict.fromkeys(stages, "pass"),
        "timing": "not_run",
    }, [(s.stage, s.message) for s in report.stages]
    assert report.verdict == "pass" and report.generations == ["v6e"]
    compiled = report.stage("compile")
    assert compiled is not None and [g.generation for g in compiled.generations] == ["v6e"]
    v6e = compiled.generations[0]
    assert v6e.vmem_bytes and v6e.estimate_seconds and v6e.estimate_seconds > 0
    torch_stage = report.stage("torch")
    assert torch_stage is not None and torch_stage.snippet and "jax_op" in torch_stage.snippet
    # progress: strictly increasing, one step per stage, ending at the total with the verdict
    values = [progress for progress, _, _ in events]
    assert values == sorted(set(values)) and all(total == len(stages) for _, total, _ in events)
    assert {int(v) for v in values[:-1]} == set(range(len(stages)))
    assert events[-1] == (len(stages), len(stages), "verdict: pass")
    assert any("Lowering" in (message or "") for _, _, message in events)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_planted_out_of_bounds_read_gets_a_fail_verdict(roots_env: Path) -> None:
    async with Client(build_server()) as client:
        result = await client.call_tool(
            "check_kernel", {"path": str(KERNELS / "oob_prefetch.py"), "stages": ["correctness"]}
        )
    assert not result.is_error, text_of(result)  # a FAIL is a verdict, not a tool failure
    report = KernelCheckReport.model_validate(result.structured_content)
    stage = report.stage("correctness")
    assert report.verdict == "fail" and stage is not None and stage.verdict == "fail"
    assert "out-of-bounds read" in stage.message
    assert "`starts_ref` (scalar-prefetch parameter 0" in stage.message


@pytest.mark.slow
@pytest.mark.anyio
async def test_kernels_that_cannot_run_are_error_results_and_the_server_lives_on(
    roots_env: Path, new_children: Callable[[], list[psutil.Process]]
) -> None:
    async with Client(build_server()) as client:
        broken = {
            "import": await client.call_tool(
                "check_kernel", {"path": str(KERNELS / "import_error.py"), "stages": ["correctness"]}
            ),
            "hang": await client.call_tool(
                "check_kernel",
                {"path": str(KERNELS / "hangs.py"), "stages": ["correctness"], "timeout_s": 3},
            ),
            "missing": await client.call_tool("check_kernel", {"path": "nope.py"}),
            "outside": await client.call_tool("check_kernel", {"path": "/etc/hostname"}),
            "generation": await client.call_tool(
                "check_kernel", {"path": str(KERNELS / "axpy.py"), "generations": ["v9z"]}
            ),
        }
        raised = await client.call_tool(
            "check_kernel", {"path": str(KERNELS / "raises.py"), "stages": ["correctness"]}
        )
        alive = await client.call_tool("kernel_templates", {})
    assert _one_line_error(broken["import"]).startswith("cannot import import_error.py (line 6)")
    hang = _one_line_error(broken["hang"])
    assert "did not finish within 3 s" in hang and "stopped" in hang
    assert _one_line_error(broken["missing"]) == f"no such kernel file: {roots_env / 'nope.py'}"
    assert "is outside the allowed folders" in _one_line_error(broken["outside"])
    assert "unknown TPU generation 'v9z'" in _one_line_error(broken["generation"])
    # a kernel that raises while it runs is checked: the verdict says where and why
    assert not raised.is_error, text_of(raised)
    stage = KernelCheckReport.model_validate(raised.structured_content).stage("correctness")
    assert stage is not None and stage.verdict == "fail"
    assert "raised ValueError: row-major layouts are not supported yet" in stage.message
    assert not alive.is_error and alive.structured_content["result"]  # type: ignore[index]
    assert not new_children()  # the hung kernel is gone


@pytest.mark.slow
@pytest.mark.anyio
async def test_tune_with_budget_two_records_two_attempts_and_resumes(roots_env: Path) -> None:
    run_dir = roots_env / "runs" / "axpy"
    arguments = {
        "path": str(KERNELS / "axpy.py"),
        "budget": 2,
        "space": {"block_rows": [8, 16, 32]},
        "run_dir": "runs/axpy",
    }
    events, on_progress = _recorder()
    async with Client(build_server()) as client:
        bad = {
            "budget": await client.call_tool("tune_kernel", {**arguments, "budget": 0}),
            "outside": await client.call_tool("tune_kernel", {**arguments, "run_dir": "/tmp"}),
        }
        assert not run_dir.exists()  # refused before anything was written
        first = await client.call_tool("tune_kernel", arguments, progress_callback=on_progress)
        again = await client.call_tool("tune_kernel", arguments)
    assert bad["budget"].is_error
    assert "is outside the allowed folders" in _one_line_error(bad["outside"])
    assert not first.is_error, text_of(first)
    report = TuneReport.model_validate(first.structured_content)
    assert report.run_dir == str(run_dir) and report.budget == 2 and report.attempts_used == 2
    assert [a.n for a in report.attempts] == [1, 2] and report.attempts[0].params == {"block_rows": 8}
    assert all(a.verdict == "pass" and a.estimate_seconds for a in report.attempts), report.attempts
    assert report.best is not None and report.default is not None and report.speedup_over_default
    starts = [r for r in RunFolder(run_dir).records() if r["event"] == "start"]
    assert len(starts) == 2 and sorted(p.name for p in (run_dir / "attempts").iterdir()) == [
        "1.json",
        "2.json",
    ]
    messages = [message or "" for _, _, message in events]
    assert any("attempt 1 of 2" in m for m in messages) and any("attempt 2 of 2" in m for m in messages)
    values = [progress for progress, _, _ in events]
    assert values == sorted(set(values)) and events[-1][:2] == (3, 3)
    # calling again resumes the recorded run: the budget is spent, nothing more is tried
    assert not again.is_error, text_of(again)
    resumed = TuneReport.model_validate(again.structured_content)
    assert resumed.resumed and resumed.attempts == report.attempts
    assert len([r for r in RunFolder(run_dir).records() if r["event"] == "start"]) == 2


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_kernels_over_stdio() -> None:
    async with served_client("kernels", str(KERNELS)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        templates = await client.call_tool("kernel_templates", {})
    assert names == TOOLS
    assert not templates.is_error and len(templates.structured_content["result"]) == len(list_templates())  # type: ignore[index]
