"""Cursor: `.cursor/mcp.json` and project rules (`.cursor/rules/*.mdc`).

Formats (checked against the docs):
- `mcp.json` with a top-level `mcpServers` object (`command`, `args`), in `.cursor/` or `~/.cursor/`:
  https://cursor.com/docs/context/mcp
- rules: `.mdc` files in `.cursor/rules/` with front matter `description`, `globs`, `alwaysApply`
  (`alwaysApply: true` is always included; a `description` alone lets the agent pull the rule in):
  https://cursor.com/docs/context/rules
- hooks: `.cursor/hooks.json` (`version: 1`, `hooks.beforeShellExecution[].command`, paths relative to
  the file), answered with `permission` allow/deny: https://cursor.com/docs/agent/hooks
"""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.bundle.readme import harness_readme
from tpu_runtime.bundle.render import (
    GENERATED_NOTE,
    TOOL_NAMES_NOTE,
    BundleFile,
    copy_file,
    demote,
    front_matter,
    json_file,
    mcp_servers,
    text_file,
)
from tpu_runtime.bundle.source import GUARD_HOOK, CanonicalSource

RULES = ".cursor/rules"
MCP_CONFIG = ".cursor/mcp.json"
HOOKS = ".cursor/hooks.json"
HOOK_ADAPTER = Path(__file__).with_name("guard_hook.py")

README = """\
Install (Cursor):

```bash
tpu-agent bundle --harness cursor   # in the tpu-agent checkout: writes bundles/cursor/ (not in git)
cp -r bundles/cursor/.cursor /path/to/your/project/     # mcp.json and rules
# or, for every project: merge bundles/cursor/.cursor/mcp.json into ~/.cursor/mcp.json
```

`.cursor/mcp.json` starts the five tpu-agent MCP servers (`tpu-agent serve NAME`; install tpu-agent first
so `tpu-agent` is on `PATH`); they show under Settings -> MCP. `.cursor/rules/tpu-agent.mdc` is always
applied (the router's hand-off table); each specialist's and each skill's rule is pulled in by the agent
when its description fits. `clients/cursor/mcp.json` is the same server list.

Guard against self-approval: `.cursor/hooks.json` runs `hooks/guard_hook.py cursor` before every terminal
command the agent starts; it applies the Claude Code plugin's check (`hooks/deny_approvals.py`, shipped
beside it) and answers `deny` for `tpu-agent approvals approve`, `tpu-agent approver`, `sqlite3` on the
state database and the spellings that hide them. It needs `python3` on `PATH`. Cursor also asks before
each terminal command the person has not allowlisted: keep those commands off the allowlist. Whatever the
client does, an approval is a signature made with the person's passphrase, which no agent has.
"""


def mcp_config(source: CanonicalSource) -> dict[str, object]:
    return {"mcpServers": mcp_servers(source, with_type=False)}


def hooks() -> dict[str, object]:
    hook = {"command": "python3 hooks/guard_hook.py cursor"}  # relative to .cursor/hooks.json
    return {"version": 1, "hooks": {"beforeShellExecution": [hook]}}


def build(source: CanonicalSource) -> list[BundleFile]:
    router_body = f"{GENERATED_NOTE}\n\n# tpu-agent\n\n{TOOL_NAMES_NOTE}\n\n{demote(source.router.body, 1)}\n"
    files = [
        json_file(MCP_CONFIG, mcp_config(source)),
        json_file(HOOKS, hooks()),
        copy_file(source, GUARD_HOOK, ".cursor/hooks/deny_approvals.py"),
        BundleFile(".cursor/hooks/guard_hook.py", HOOK_ADAPTER.read_bytes()),
        text_file(
            f"{RULES}/tpu-agent.mdc",
            front_matter({"description": source.router.description, "alwaysApply": True}, router_body),
        ),
    ]
    for agent in source.specialists:
        playbook = f"Playbook: `{agent.workflow}`.\n\n" if agent.workflow else ""
        body = f"{GENERATED_NOTE}\n\n# {agent.name}\n\n{playbook}{demote(agent.body, 1)}\n"
        meta = {"description": agent.description, "alwaysApply": False}
        files.append(text_file(f"{RULES}/{agent.name}.mdc", front_matter(meta, body)))
    for skill in source.skills:
        body = f"{GENERATED_NOTE}\n\n{skill.body.strip()}\n"
        meta = {"description": skill.description, "alwaysApply": False}
        files.append(text_file(f"{RULES}/{skill.name}.mdc", front_matter(meta, body)))
    files.append(text_file("README.md", harness_readme("Cursor", README)))
    return files
