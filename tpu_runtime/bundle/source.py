"""Read the canonical source every bundle is built from: agents, skills, playbooks, servers, guard.

Bundles are built from a source checkout (the wheel does not ship `skills/` or `hooks/`), so the root is
the folder that holds `agents/`, `skills/`, `workflows/` and `hooks/deny_approvals.py` side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from tpu_runtime import __version__
from tpu_runtime.agent_defs import ROUTER, SPECIALISTS, AgentDef, load_agents
from tpu_runtime.errors import BadInput
from tpu_runtime.resources import agents_dir

GUARD_HOOK = "hooks/deny_approvals.py"
SERVER_PREFIX = "tpu-"
"""A server served by `tpu-agent serve NAME` is configured under the name `tpu-NAME`."""


class SourceError(BadInput, ValueError):
    """The canonical source is missing a folder or a file is malformed (one line)."""


@dataclass(frozen=True)
class Skill:
    """One `skills/<name>/SKILL.md`: its front matter and Markdown body, and the file's exact text."""

    name: str
    description: str
    body: str
    text: str


@dataclass(frozen=True)
class Server:
    """One MCP server: the name clients list it under and the `tpu-agent serve` name that starts it."""

    key: str
    serve_name: str

    @property
    def command(self) -> str:
        return "tpu-agent"

    @property
    def args(self) -> list[str]:
        return ["serve", self.serve_name]


@dataclass(frozen=True)
class CanonicalSource:
    """Everything a bundle is made of, read once from the checkout."""

    root: Path
    version: str
    agents: dict[str, AgentDef]
    skills: list[Skill]
    servers: list[Server]

    @property
    def router(self) -> AgentDef:
        return self.agents[ROUTER]

    @property
    def specialists(self) -> list[AgentDef]:
        return [self.agents[name] for name in SPECIALISTS]

    def read(self, relative: str) -> bytes:
        """A canonical file's bytes, by path relative to the root (copied into bundles unchanged)."""
        return (self.root / relative).read_bytes()

    def canonical_files(self, *folders: str) -> list[str]:
        """Relative paths of every file under the given folders, sorted (caches and bytecode left out)."""
        found: list[str] = []
        for folder in folders:
            for path in sorted((self.root / folder).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    found.append(path.relative_to(self.root).as_posix())
        return found


def _parse_skill(path: Path) -> Skill:
    text = path.read_text()
    parts = text.split("---\n", 2)
    if not text.startswith("---\n") or len(parts) < 3:
        raise SourceError(f"{path}: no YAML front matter between '---' lines")
    meta = yaml.safe_load(parts[1])
    if not isinstance(meta, dict) or not meta.get("name") or not meta.get("description"):
        raise SourceError(f"{path}: front matter needs 'name' and 'description'")
    return Skill(name=str(meta["name"]), description=str(meta["description"]), body=parts[2], text=text)


def load_source(serve_names: Sequence[str], root: Path | None = None) -> CanonicalSource:
    """The canonical source at `root` (default: the checkout this package runs from).

    `serve_names` are the servers `tpu-agent serve` knows (the front end passes its registry), without
    `all`: bundles list each specialist's server so tool names carry the server they come from.
    """
    base = root or agents_dir().parent
    for needed in ("agents", "skills", "workflows", GUARD_HOOK):
        if not (base / needed).exists():
            raise SourceError(
                f"{base / needed} does not exist: bundles are built from a tpu-agent source checkout"
            )
    agents = load_agents(base / "agents")
    missing = {ROUTER, *SPECIALISTS} - set(agents)
    if missing:
        raise SourceError(f"{base / 'agents'}: no agent file for {', '.join(sorted(missing))}")
    skills = [_parse_skill(path) for path in sorted((base / "skills").glob("*/SKILL.md"))]
    servers = [Server(key=f"{SERVER_PREFIX}{name}", serve_name=name) for name in serve_names if name != "all"]
    if not servers:
        raise SourceError("no MCP servers given: pass the names `tpu-agent serve` knows")
    return CanonicalSource(root=base, version=__version__, agents=agents, skills=skills, servers=servers)
