"""Gemini CLI: an extension folder (`gemini-extension.json`, `GEMINI.md`, skills, a BeforeTool hook).

Formats (checked against the docs):
- manifest fields `name`, `version`, `description`, `mcpServers`, `contextFileName`, `excludeTools`
  (with `run_shell_command(prefix)` entries), and `hooks/hooks.json`, `skills/<name>/SKILL.md`,
  `${extensionPath}`: https://geminicli.com/docs/extensions/reference
- hooks (`BeforeTool`, `matcher`, timeout in milliseconds, exit code 2 blocks):
  https://geminicli.com/docs/hooks/reference
Sub-agents are a preview feature whose tool names differ from ours, so the specialists travel in
`GEMINI.md` instead.
"""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.agent_defs import PLUGIN_NAME
from tpu_runtime.bundle.claude_code import DESCRIPTION
from tpu_runtime.bundle.guard import DENIED_COMMANDS, command_text
from tpu_runtime.bundle.readme import harness_readme
from tpu_runtime.bundle.render import BundleFile, context_document, copy_file, json_file, text_file
from tpu_runtime.bundle.source import GUARD_HOOK, CanonicalSource

CONTEXT_FILE = "GEMINI.md"
HOOK_ADAPTER = Path(__file__).with_name("guard_hook.py")


def manifest(source: CanonicalSource) -> dict[str, object]:
    return {
        "name": PLUGIN_NAME,
        "version": source.version,
        "description": DESCRIPTION,
        "mcpServers": {s.key: {"command": s.command, "args": s.args} for s in source.servers},
        "contextFileName": CONTEXT_FILE,
        "excludeTools": [f"run_shell_command({command_text(words)})" for words in DENIED_COMMANDS],
    }


def hooks() -> dict[str, object]:
    return {
        "hooks": {
            "BeforeTool": [
                {
                    "matcher": "run_shell_command",
                    "hooks": [
                        {
                            "name": "tpu-agent-approval-guard",
                            "type": "command",
                            "command": 'python3 "${extensionPath}${/}hooks${/}guard_hook.py" gemini',
                            "timeout": 10000,
                            "description": "Refuse shell commands that would approve a tpu-agent run.",
                        }
                    ],
                }
            ]
        }
    }


README = """\
Install (Gemini CLI):

```bash
tpu-agent bundle --harness gemini-cli   # in the tpu-agent checkout: writes bundles/gemini-cli/ (not in git)
gemini extensions install bundles/gemini-cli     # or: gemini extensions link bundles/gemini-cli
gemini mcp list                                  # the five tpu-* servers, each Connected
```

The extension starts the five tpu-agent MCP servers (`tpu-agent serve NAME`; install tpu-agent first
so `tpu-agent` is on `PATH`), loads `GEMINI.md` (the router's hand-off table, each specialist's
instructions and the skills) and the four skills in `skills/`.

Guard against self-approval: `excludeTools` removes `run_shell_command` calls that start with the
approve, approver or sqlite3 commands, and a BeforeTool hook (`hooks/hooks.json`) runs the same check
as the Claude Code plugin (`hooks/deny_approvals.py`, through `hooks/guard_hook.py gemini`) on every shell
command, exit code 2 blocking it. Both are seatbelts; each approval is still a signature made with the
person's passphrase.
"""


def build(source: CanonicalSource) -> list[BundleFile]:
    return [
        json_file("gemini-extension.json", manifest(source)),
        text_file(CONTEXT_FILE, context_document(source)),
        json_file("hooks/hooks.json", hooks()),
        copy_file(source, GUARD_HOOK, "hooks/deny_approvals.py"),
        BundleFile("hooks/guard_hook.py", HOOK_ADAPTER.read_bytes()),
        *(copy_file(source, path) for path in source.canonical_files("skills")),
        text_file("README.md", harness_readme("Gemini CLI", README)),
    ]
