"""VS Code (GitHub Copilot agent mode): `.vscode/mcp.json`, repository instructions, terminal approvals.

Formats (checked against the docs):
- `mcp.json` with a top-level `servers` object and a `type` per server:
  https://code.visualstudio.com/docs/copilot/reference/mcp-configuration
- always-on instructions in `.github/copilot-instructions.md`:
  https://code.visualstudio.com/docs/agent-customization/custom-instructions
- `chat.tools.terminal.autoApprove`: a command prefix mapped to `false` is never auto-approved, so the
  person confirms it each time: https://code.visualstudio.com/docs/agents/approvals
"""

from __future__ import annotations

from tpu_runtime.bundle.guard import DENIED_COMMANDS, command_text
from tpu_runtime.bundle.readme import harness_readme
from tpu_runtime.bundle.render import BundleFile, context_document, json_file, mcp_servers, text_file
from tpu_runtime.bundle.source import CanonicalSource

MCP_CONFIG = ".vscode/mcp.json"

README = """\
Install (VS Code with GitHub Copilot):

```bash
tpu-agent bundle --harness vscode   # in the tpu-agent checkout: writes bundles/vscode/ (not in git)
mkdir -p /path/to/your/workspace/.vscode /path/to/your/workspace/.github
cp bundles/vscode/.vscode/mcp.json /path/to/your/workspace/.vscode/
cp bundles/vscode/.github/copilot-instructions.md /path/to/your/workspace/.github/   # or merge
# merge bundles/vscode/.vscode/settings.json into the workspace's (or your user) settings.json
```

`.vscode/mcp.json` starts the five tpu-agent MCP servers (`tpu-agent serve NAME`; install tpu-agent first
so `tpu-agent` is on `PATH`); start them from the MCP view or `MCP: List Servers`. The instructions file
holds the router's hand-off table, each specialist's instructions and the skills.
`clients/vscode/mcp.json` is the same server list.

Guard against self-approval: `.vscode/settings.json` maps the approve, approver and sqlite3 commands to
`false` in `chat.tools.terminal.autoApprove`, so VS Code never runs them without the person confirming,
even where other commands are auto-approved. VS Code cannot refuse a command outright from a settings
file, and its Autopilot and Bypass Approvals modes skip these rules: do not use them with tpu-agent. An
approval is still a signature made with the person's passphrase, which no agent has.
"""


def mcp_config(source: CanonicalSource) -> dict[str, object]:
    return {"servers": mcp_servers(source, with_type=True)}


def settings() -> dict[str, object]:
    return {"chat.tools.terminal.autoApprove": {command_text(words): False for words in DENIED_COMMANDS}}


def build(source: CanonicalSource) -> list[BundleFile]:
    return [
        json_file(MCP_CONFIG, mcp_config(source)),
        json_file(".vscode/settings.json", settings()),
        text_file(".github/copilot-instructions.md", context_document(source)),
        text_file("README.md", harness_readme("VS Code", README)),
    ]
