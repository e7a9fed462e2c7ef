"""Google Antigravity: its MCP config, workspace rules, and one workflow per skill.

Formats:
- MCP servers: `mcp_config.json` with a top-level `mcpServers` object (`command`, `args`), which
  Antigravity keeps at `~/.gemini/antigravity/mcp_config.json`: https://antigravity.google/docs/mcp
- rules (Markdown in the workspace's `.agents/rules/`, front matter `trigger: always_on` or
  `trigger: model_decision` with a `description`) and workflows (Markdown with a `description`, run as
  `/name`, in `.agents/workflows/`): https://antigravity.google/docs/rules-workflows
Published descriptions of those pages disagree on the folder (`.agents/` for Antigravity 2.0, `.agent/`
before), so the README names both. No Antigravity client installs from npm, so no test opens this
bundle with the real program: it is checked against the documented format only.
"""

from __future__ import annotations

from tpu_runtime.bundle.readme import harness_readme
from tpu_runtime.bundle.render import (
    GENERATED_NOTE,
    TOOL_NAMES_NOTE,
    BundleFile,
    demote,
    front_matter,
    json_file,
    mcp_servers,
    text_file,
)
from tpu_runtime.bundle.source import CanonicalSource

RULES = ".agents/rules"
WORKFLOWS = ".agents/workflows"

README = """\
Install (Google Antigravity):

```bash
tpu-agent bundle --harness antigravity   # in the tpu-agent checkout: writes bundles/antigravity/ (not in git)
cp -r bundles/antigravity/.agents /path/to/your/workspace/      # rules and workflows
# merge bundles/antigravity/mcp_config.json into ~/.gemini/antigravity/mcp_config.json
# (or paste it from the agent panel: ... > MCP Servers > Manage MCP Servers > View raw config)
```

`mcp_config.json` starts the five tpu-agent MCP servers (`tpu-agent serve NAME`; install tpu-agent first
so `tpu-agent` is on `PATH`). `.agents/rules/tpu-agent.md` is always on (the router's hand-off table);
each specialist's rule is applied when the agent decides it fits (`model_decision`); each skill is a
workflow you start with `/onboard-model`, `/diagnose-tpu-run`, `/write-pallas-kernel` or `/ask-tpu-docs`.
Versions of Antigravity before 2.0 read `.agent/rules` and `.agent/workflows`: rename the folder.

Guard against self-approval: Antigravity documents no hook and no permission file a bundle can ship, so
this bundle has no guard of its own. Keep Antigravity's terminal command auto-execution off (or on
"request review") and add `tpu-agent approvals approve`, `tpu-agent approver` and `sqlite3` to its
terminal deny list in the settings. Whatever the client does, an approval is a signature made with the
person's passphrase, which no agent has.

No Antigravity client installs from npm, so this bundle is checked against the documented format only.
"""


def build(source: CanonicalSource) -> list[BundleFile]:
    router = front_matter(
        {"trigger": "always_on", "description": source.router.description},
        f"{GENERATED_NOTE}\n\n# tpu-agent\n\n{TOOL_NAMES_NOTE}\n\n{demote(source.router.body, 1)}\n",
    )
    files = [
        json_file("mcp_config.json", {"mcpServers": mcp_servers(source, with_type=False)}),
        text_file(f"{RULES}/tpu-agent.md", router),
    ]
    for agent in source.specialists:
        playbook = f"Playbook: `{agent.workflow}`.\n\n" if agent.workflow else ""
        body = f"{GENERATED_NOTE}\n\n# {agent.name}\n\n{playbook}{demote(agent.body, 1)}\n"
        meta = {"trigger": "model_decision", "description": agent.description}
        files.append(text_file(f"{RULES}/{agent.name}.md", front_matter(meta, body)))
    for skill in source.skills:
        body = f"{GENERATED_NOTE}\n\n{skill.body.strip()}\n"
        files.append(
            text_file(f"{WORKFLOWS}/{skill.name}.md", front_matter({"description": skill.description}, body))
        )
    files.append(text_file("README.md", harness_readme("Google Antigravity", README)))
    return files
