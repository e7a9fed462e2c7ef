"""Every workflow is a prompt and run reports are resources, on the `tpu-agent` server that serves all.

Kept fast: the diagnose call reads one crash log, and the kernel check runs one cheap stage for one
generation on a module written from a template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client, MCPError
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import ResourceLink, TextContent
from pydantic import BaseModel

from mcp_servers import all as all_servers
from mcp_servers._report_store import META_REPORT_ID, META_REPORT_URI, ReportStore
from tests.conftest import REPO

WORKFLOWS = REPO / "workflows"
HBM_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "jax_train_step_compile.log"
SCHEMES = {"onboard-report", "diagnose-report", "kernel-report"}


@pytest.fixture
def roots_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Allow only this test's folder (no client roots are sent)."""
    monkeypatch.setenv("TPU_AGENT_ROOTS", str(tmp_path))
    return tmp_path


def _workflows() -> dict[str, dict[str, Any]]:
    """Workflow name -> the YAML as written (read here, not through the runtime the server uses)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        found[data["name"]] = data
    return found


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.mark.anyio
async def test_every_workflow_is_a_prompt_with_every_step() -> None:
    workflows = _workflows()
    assert len(workflows) >= 4
    async with Client(all_servers.build_server()) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == set(workflows)  # one prompt per workflow file, named after the workflow
        texts: dict[str, str] = {}
        for name, prompt in prompts.items():
            arguments = {a.name: f"subject-of-{name}" for a in prompt.arguments or []}
            assert arguments, f"prompt {name} takes no argument to say what it is about"
            got = await client.get_prompt(name, arguments)
            texts[name] = "\n".join(
                m.content.text for m in got.messages if isinstance(m.content, TextContent)
            )
    for name, workflow in workflows.items():
        text = texts[name]
        assert f"subject-of-{name}" in text and f"workflows/{name}.yaml" in text
        for number, step in enumerate(workflow["steps"], 1):
            assert f"{number}. {step['title']}" in text, (name, step["title"])
        gated = [step for step in workflow["steps"] if step.get("gate") == "approval"]
        assert ("Gate: runs only after the person approves" in text) == bool(gated), name


@pytest.mark.slow
@pytest.mark.anyio
async def test_diagnose_and_kernel_reports_are_readable_as_resources(roots_env: Path) -> None:
    async with Client(all_servers.build_server()) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        diagnosed = await client.call_tool("diagnose_log", {"text": HBM_LOG.read_text()})
        created = await client.call_tool("new_kernel", {"name": "my_norm", "template": "rmsnorm"})
        assert not created.is_error, _text(created)
        checked = await client.call_tool(
            "check_kernel", {"path": "my_norm.py", "generations": ["v6e"], "stages": ["honesty"], "seed": 0}
        )
        reads: dict[str, Any] = {}
        for name, result in (("diagnose", diagnosed), ("kernel", checked)):
            assert not result.is_error, _text(result)
            assert result.meta is not None
            uri = result.meta[META_REPORT_URI]
            assert uri == f"{name}-report://{result.meta[META_REPORT_ID]}"
            links = [c for c in result.content if isinstance(c, ResourceLink)]
            assert [str(link.uri) for link in links] == [uri]
            reads[name] = (await client.read_resource(uri)).contents[0]
        with pytest.raises(MCPError, match="no diagnose report"):
            await client.read_resource("diagnose-report://999-nothing")
        with pytest.raises(MCPError, match="no kernel report"):
            await client.read_resource("kernel-report://999-nothing")
    assert templates == {f"{scheme}://{{report_id}}" for scheme in SCHEMES}
    for name, result in (("diagnose", diagnosed), ("kernel", checked)):
        content = reads[name]
        assert content.mime_type == "application/json"
        assert json.loads(content.text) == result.structured_content  # the same report, read back
    assert diagnosed.structured_content["crashes"][0]["category"] == "hbm_oom"
    assert checked.structured_content["file"] == str(roots_env / "my_norm.py")
    assert {s["stage"]: s["verdict"] for s in checked.structured_content["stages"]}["honesty"] == "pass"


class _Report(BaseModel):
    n: int


def test_the_store_keeps_only_the_last_reports() -> None:
    store: ReportStore[_Report] = ReportStore("test-report", "test report", keep=2)
    ids = [store.add(label, _Report(n=n)) for n, label in enumerate(["a b", "c/d", ""])]
    assert ids == ["1-a_b", "2-c_d", "3-report"]
    assert store.ids() == ids[1:] and store.get(ids[0]) is None
    assert json.loads(store.read(ids[2])) == {"n": 2}
    with pytest.raises(ResourceNotFoundError, match="no test report '1-a_b' in this server"):
        store.read(ids[0])
