"""Read the agent definitions in `agents/*.md`: YAML front matter (name, description, workflow, tools)
plus a Markdown body that is the agent's system prompt.

Claude Code reads the same files as subagents; the CLI's router names these agents and its LLM mode
uses each body as the specialist's prompt and each `tools` list as the only tools it may call. Parsing
lives here once so all three agree on what a file says.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from tpu_runtime.errors import BadInput
from tpu_runtime.resources import agents_dir
from tpu_runtime.yaml_data import safe_load

ROUTER = "tpu-agent"
SPECIALISTS: tuple[str, ...] = (
    "tpu-model-onboarding",
    "tpu-diagnostics",
    "tpu-kernel-development",
    "tpu-knowledge-base",
)
"""The four specialists the router hands requests to, in the order the docs list them."""

PLUGIN_NAME = "tpu-agent"
PLUGIN_SERVER_PREFIX = f"plugin_{PLUGIN_NAME}_"
"""Claude Code names a plugin's MCP server `plugin:<plugin>:<server>`, so its tools are
`mcp__plugin_tpu-agent_<server>__<tool>`; a server from a project's `.mcp.json` gives `mcp__<server>__<tool>`.
Agent files list both spellings so the allowlist holds either way."""

MCP_TOOL = re.compile(r"^mcp__(?P<server>[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__(?P<tool>[A-Za-z0-9_-]+)$")
"""A fully qualified MCP tool name as Claude Code spells it: `mcp__<server>__<tool>`."""


class AgentFileError(BadInput, ValueError):
    """An agent file without front matter, with bad YAML, or missing a required key (one line)."""


class AgentDef(BaseModel):
    """One agent file: what routes to it, what it follows, what it may call, and its prompt."""

    name: str
    description: str
    workflow: str | None = Field(default=None, description="playbook path, e.g. workflows/onboard.yaml")
    tools: list[str] = Field(default_factory=list, description="tool allowlist, as written in the file")
    body: str = Field(description="the Markdown after the front matter: the agent's system prompt")
    path: Path

    def mcp_tools(self) -> list[tuple[str, str]]:
        """(server, tool) for each MCP tool in the allowlist, either spelling, once each, in file order."""
        found: list[tuple[str, str]] = []
        for name in self.tools:
            split = split_tool_name(name)
            if split is not None and split not in found:
                found.append(split)
        return found

    def allows(self, name: str) -> bool:
        """Whether a tool name, in either spelling, is on the allowlist."""
        wanted = canonical_tool_name(name)
        return any(canonical_tool_name(tool) == wanted for tool in self.tools)


def split_tool_name(name: str) -> tuple[str, str] | None:
    """`mcp__tpu-onboarding__op_status` or `mcp__plugin_tpu-agent_tpu-onboarding__op_status`
    -> ('tpu-onboarding', 'op_status'); None for names that are not MCP tools."""
    match = MCP_TOOL.match(name)
    if match is None:
        return None
    return match["server"].removeprefix(PLUGIN_SERVER_PREFIX), match["tool"]


def canonical_tool_name(name: str) -> str:
    """The `.mcp.json` spelling of a tool name (plugin spellings map to it; other names are unchanged)."""
    split = split_tool_name(name)
    return f"mcp__{split[0]}__{split[1]}" if split else name


def plugin_tool_name(name: str) -> str:
    """The spelling Claude Code uses for the same tool when the server comes from this plugin."""
    split = split_tool_name(name)
    return f"mcp__{PLUGIN_SERVER_PREFIX}{split[0]}__{split[1]}" if split else name


def parse_agent_text(text: str, path: Path) -> AgentDef:
    """Split front matter from body and check the keys every agent file must have."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise AgentFileError(f"{path}: no YAML front matter (the file must start with a '---' line)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise AgentFileError(f"{path}: the front matter has no closing '---' line") from None
    try:
        meta = safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AgentFileError(f"{path}: bad YAML front matter: {first}") from None
    if not isinstance(meta, dict):
        raise AgentFileError(f"{path}: the front matter must be a mapping of keys to values")
    for key in ("name", "description"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise AgentFileError(f"{path}: front matter key {key!r} is missing or empty")
    tools = meta.get("tools") or []
    if isinstance(tools, str):  # Claude Code also accepts "Read, Grep, Glob"
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise AgentFileError(f"{path}: 'tools' must be a list of tool names")
    workflow = meta.get("workflow")
    if workflow is not None and not isinstance(workflow, str):
        raise AgentFileError(f"{path}: 'workflow' must be a path such as workflows/onboard.yaml")
    return AgentDef(
        name=meta["name"].strip(),
        description=" ".join(meta["description"].split()),
        workflow=workflow,
        tools=tools,
        body="\n".join(lines[end + 1 :]).strip() + "\n",
        path=path,
    )


def parse_agent_file(path: Path) -> AgentDef:
    return parse_agent_text(path.read_text(encoding="utf-8"), path)


@cache
def load_agents(folder: Path | None = None) -> dict[str, AgentDef]:
    """Every `*.md` agent in `folder` (default: the shipped `agents/`), by name."""
    root = folder or agents_dir()
    agents: dict[str, AgentDef] = {}
    for path in sorted(root.glob("*.md")):
        agent = parse_agent_file(path)
        if agent.name in agents:
            raise AgentFileError(
                f"{path}: agent name {agent.name!r} is also used by {agents[agent.name].path}"
            )
        agents[agent.name] = agent
    return agents
