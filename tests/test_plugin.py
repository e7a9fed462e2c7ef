"""The Claude Code plugin at the repository root: agents, skills, playbooks, manifests, and the real CLI.

The pure-Python checks always run. The two checks with the real Claude Code CLI (npm
`@anthropic-ai/claude-code`) run when `claude` is on PATH or `TPU_AGENT_CLAUDE_BIN` names it:
`claude plugin validate --strict` on the marketplace and on the plugin manifest (the latter also checks
every agent, skill and hooks.json), and `claude mcp list` in the repository root, which starts every
server in `.mcp.json` and must report each one Connected.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.subprocess_support import run_text
from tpu_runtime.agent_defs import (
    ROUTER,
    SPECIALISTS,
    AgentDef,
    AgentFileError,
    canonical_tool_name,
    load_agents,
    parse_agent_text,
    plugin_tool_name,
    split_tool_name,
)
from tpu_runtime.workflow import Workflow

CLAUDE_ENV = "TPU_AGENT_CLAUDE_BIN"
BUILTIN_TOOLS = frozenset({"Agent", "Read", "Glob", "Grep", "Edit", "Write", "WebFetch", "WebSearch"})
"""Claude Code's own tools our agents may list (never Bash: commands go through approval-gated tools)."""
PLANNED_SERVERS = frozenset({"tpu-diagnostics", "tpu-kernels", "tpu-knowledge", "tpu-runs"})
"""MCP servers the specialists' allowlists name before their modules land in mcp_servers/."""
SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


@pytest.fixture(scope="module")
def agents() -> dict[str, AgentDef]:
    return load_agents(REPO / "agents")


def _workflow(path: Path) -> Workflow:
    return Workflow.model_validate(yaml.safe_load(path.read_text()))


# --- agents --------------------------------------------------------------------------------------


def test_the_router_and_four_specialists_exist(agents: dict[str, AgentDef]) -> None:
    assert set(agents) == {ROUTER, *SPECIALISTS}
    for agent in agents.values():
        assert agent.path.stem == agent.name  # Claude Code names plugin agents by file
        assert len(agent.description) >= 120, f"{agent.name}: a description that routes needs detail"
        assert len(agent.body) >= 400, f"{agent.name}: the body is the agent's whole prompt"


def test_tools_are_builtins_or_fully_qualified_mcp_names(agents: dict[str, AgentDef]) -> None:
    for agent in agents.values():
        assert agent.tools, f"{agent.name} lists no tools (an empty list would inherit all of them)"
        assert len(set(agent.tools)) == len(agent.tools), agent.name
        for tool in agent.tools:
            assert tool in BUILTIN_TOOLS or split_tool_name(tool) is not None, f"{agent.name}: {tool!r}"
            assert "Bash" not in tool and not re.search("approv", tool, re.I), f"{agent.name}: {tool!r}"


def test_mcp_tools_are_listed_in_both_spellings(agents: dict[str, AgentDef]) -> None:
    """Claude Code calls a plugin's server `plugin:tpu-agent:<server>`, so its tools are
    `mcp__plugin_tpu-agent_<server>__<tool>`; a project `.mcp.json` server gives `mcp__<server>__<tool>`."""
    for agent in agents.values():
        listed = set(agent.tools)
        for server, tool in agent.mcp_tools():
            short = f"mcp__{server}__{tool}"
            assert short in listed, f"{agent.name}: {short}"
            assert plugin_tool_name(short) in listed, f"{agent.name}: {plugin_tool_name(short)}"
            assert canonical_tool_name(plugin_tool_name(short)) == short
            assert agent.allows(plugin_tool_name(short)) and agent.allows(short)
        assert not agent.allows("mcp__tpu-onboarding__not_a_tool")


def test_the_router_only_delegates(agents: dict[str, AgentDef]) -> None:
    router = agents[ROUTER]
    assert router.workflow is None
    assert set(router.tools) <= {"Agent", "Read", "Glob", "Grep"}
    assert "Agent" in router.tools
    assert not router.mcp_tools()
    for name in SPECIALISTS:
        assert f"`{name}`" in router.body, f"the router's table does not name {name}"
    assert "never run" in router.body.lower()


def test_specialists_follow_an_existing_playbook_of_their_own(agents: dict[str, AgentDef]) -> None:
    for name in SPECIALISTS:
        agent = agents[name]
        assert agent.workflow is not None, name
        path = REPO / agent.workflow
        assert path.is_file(), f"{name}: {agent.workflow} does not exist"
        workflow = _workflow(path)
        assert workflow.agent == name
        assert workflow.name == path.stem
        assert agent.workflow in agent.body, f"{name}'s prompt does not point at its playbook"
        assert agent.mcp_tools(), f"{name} has no MCP tools"


def test_allowlists_name_known_servers_and_tools(agents: dict[str, AgentDef]) -> None:
    """Servers that exist must serve every tool an agent lists; the others are the planned ones."""
    import anyio
    from mcp import Client

    from mcp_servers.all import specialist_modules

    built = {module.NAME: module for module in specialist_modules()}
    configured = set(json.loads((REPO / ".mcp.json").read_text())["mcpServers"])
    wanted: dict[str, set[str]] = {}
    for agent in agents.values():
        for server, tool in agent.mcp_tools():
            assert server in built or server in PLANNED_SERVERS, f"{agent.name}: unknown server {server}"
            wanted.setdefault(server, set()).add(tool)
    assert "tpu-onboarding" in built and "tpu-onboarding" in configured

    async def served(server: str) -> set[str]:
        async with Client(built[server].build_server()) as client:
            return {t.name for t in (await client.list_tools()).tools}

    for server, tools in wanted.items():
        if server in built:
            missing = tools - anyio.run(served, server)
            assert not missing, f"{server} does not serve {sorted(missing)}"
    assert {"onboard_model", "op_status"} <= wanted["tpu-onboarding"]


def test_agent_file_errors_are_one_line() -> None:
    with pytest.raises(AgentFileError, match="no YAML front matter"):
        parse_agent_text("# just markdown\n", Path("a.md"))
    with pytest.raises(AgentFileError, match="no closing"):
        parse_agent_text("---\nname: x\n", Path("a.md"))
    with pytest.raises(AgentFileError, match="'description' is missing"):
        parse_agent_text("---\nname: x\n---\nbody\n", Path("a.md"))
    with pytest.raises(AgentFileError, match="bad YAML"):
        parse_agent_text("---\nname: [x\n---\nbody\n", Path("a.md"))
    parsed = parse_agent_text("---\nname: x\ndescription: d\ntools: Read, Grep\n---\nbody\n", Path("x.md"))
    assert parsed.tools == ["Read", "Grep"] and parsed.body == "body\n"


# --- playbooks -----------------------------------------------------------------------------------


def test_every_playbook_is_well_formed_and_every_step_resolves_to_a_function() -> None:
    """Steps name `tpu_runtime.<pkg>.<module>:<function>`; a missing module or function fails here."""
    for path in sorted((REPO / "workflows").glob("*.yaml")):
        workflow = _workflow(path)
        ids = [step.id for step in workflow.steps]
        assert len(ids) == len(set(ids)), path.name
        assert workflow.inputs, path.name
        for step in workflow.steps:
            assert re.fullmatch(r"tpu_runtime(\.[a-z_]+)+:[a-z_][a-z0-9_]*", step.run), (path.name, step.run)
            assert step.title and step.gate in ("none", "approval")
            module, _, func = step.run.partition(":")
            assert importlib.util.find_spec(module) is not None, f"{path.name}: no module {module}"
            assert callable(getattr(importlib.import_module(module), func, None)), (
                f"{path.name}: {module} has no function {func}; update the playbook or the module"
            )


def test_steps_on_the_users_tpu_wait_for_approval() -> None:
    for name in ("onboard", "kernel"):
        workflow = _workflow(REPO / "workflows" / f"{name}.yaml")
        gated = [s for s in workflow.steps if s.gate == "approval"]
        assert gated, f"{name}: the step on the user's TPU must wait for approval"
    assert all(s.gate == "none" for s in _workflow(REPO / "workflows" / "ask.yaml").steps)


# --- skills, manifests, license, icon ----------------------------------------------------------------


def test_skills_have_front_matter_and_point_at_real_tools_and_playbooks(agents: dict[str, AgentDef]) -> None:
    skills = sorted((REPO / "skills").glob("*/SKILL.md"))
    assert len(skills) >= 4
    every_tool = {tool for agent in agents.values() for tool in agent.tools}
    for path in skills:
        text = path.read_text()
        assert text.startswith("---\n")
        meta = yaml.safe_load(text.split("---\n")[1])
        assert meta["name"] == path.parent.name
        assert len(meta["description"]) >= 100
        for tool in re.findall(r"mcp__[\w-]+__\w+", text):
            assert tool in every_tool, f"{path}: {tool} is on no agent's allowlist"
        for playbook in re.findall(r"workflows/\w+\.yaml", text):
            assert (REPO / playbook).is_file(), f"{path}: {playbook}"


def test_manifests_agree_with_the_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    plugin = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert plugin["name"] == "tpu-agent"
    assert plugin["version"] == project["version"]
    assert plugin["license"] == project["license"] == "Apache-2.0"
    (entry,) = market["plugins"]
    assert (entry["name"], entry["version"], entry["source"]) == (plugin["name"], plugin["version"], "./")
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text


def test_icon_is_a_square_svg() -> None:
    root = ET.parse(REPO / "assets" / "icon.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == "0 0 128 128"
    assert len(list(root.iter())) > 5


# --- the real Claude Code CLI --------------------------------------------------------------------


def _claude() -> str | None:
    named = os.environ.get(CLAUDE_ENV)
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    return shutil.which("claude")


def _claude_env(home: Path) -> dict[str, str]:
    """A throwaway HOME whose user settings approve the project's .mcp.json servers; no account needed."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    bin_dir = str(Path(sys.executable).parent)  # where `tpu-agent` is installed beside this Python
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **SAFE_ENV,
    }


needs_claude = pytest.mark.skipif(
    _claude() is None,
    reason=f"the Claude Code CLI is not installed (npm install @anthropic-ai/claude-code; put `claude` on "
    f"PATH or set {CLAUDE_ENV})",
)


@pytest.mark.slow
@needs_claude
@pytest.mark.parametrize("target", [".", ".claude-plugin/plugin.json"])
def test_claude_plugin_validate(target: str, tmp_path: Path) -> None:
    claude = _claude()
    assert claude is not None
    done = run_text(
        [claude, "plugin", "validate", target, "--strict"],
        env=_claude_env(tmp_path),
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Validation passed" in output
    assert "warning" not in output.lower() and "error" not in output.lower(), output


@pytest.mark.slow
@needs_claude
def test_claude_mcp_list_connects_every_server(tmp_path: Path) -> None:
    claude = _claude()
    assert claude is not None
    done = run_text(
        [claude, "mcp", "list"],
        env=_claude_env(tmp_path),
        timeout=180,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    servers = json.loads((REPO / ".mcp.json").read_text())["mcpServers"]
    for name in servers:
        line = next((row for row in output.splitlines() if row.startswith(f"{name}:")), None)
        assert line is not None, f"{name} missing from:\n{output}"
        assert "Connected" in line, line


@pytest.mark.slow
@needs_claude
def test_claude_loads_the_plugin_with_every_component(tmp_path: Path) -> None:
    """Loaded as a plugin from another folder: its agents, skills and hook are found, and its MCP
    servers (named plugin:tpu-agent:<server>, hence the second tool spelling) connect."""
    claude = _claude()
    assert claude is not None
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    env = _claude_env(tmp_path / "home")
    details = run_text(
        [claude, "--plugin-dir", str(REPO), "plugin", "details", "tpu-agent"],
        cwd=elsewhere,
        env=env,
        timeout=120,
        check=False,
    )
    assert details.returncode == 0, details.stdout + details.stderr
    inventory = details.stdout
    agent_count = len(list((REPO / "agents").glob("*.md")))
    skill_count = len(list((REPO / "skills").glob("*/SKILL.md")))
    assert re.search(rf"Agents \({agent_count}\)", inventory), inventory
    assert re.search(rf"Skills \({skill_count}\)", inventory), inventory
    assert re.search(r"Hooks \(1\)\s+PreToolUse", inventory), inventory

    listed = run_text(
        [claude, "--plugin-dir", str(REPO), "mcp", "list"],
        cwd=elsewhere,
        env=env,
        timeout=180,
        check=False,
    )
    output = listed.stdout + listed.stderr
    assert listed.returncode == 0, output
    for name in json.loads((REPO / ".mcp.json").read_text())["mcpServers"]:
        line = next((row for row in output.splitlines() if row.startswith(f"plugin:tpu-agent:{name}:")), None)
        assert line is not None and "Connected" in line, output
