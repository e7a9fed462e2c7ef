"""Claude Code: the plugin at the repository root (manifest, marketplace, agents, skills, hook, servers).

Formats (checked against the docs):
- plugin manifest and layout: https://code.claude.com/docs/en/plugins-reference
- marketplace file: https://code.claude.com/docs/en/plugin-marketplaces
- `.mcp.json` (`mcpServers`, `type: stdio`): https://code.claude.com/docs/en/mcp
- hooks (`PreToolUse`, exit code 2 blocks, `${CLAUDE_PLUGIN_ROOT}`): https://code.claude.com/docs/en/hooks
- permission rules (`Bash(prefix:*)`, `Edit(path)`, `Read(path)`): https://code.claude.com/docs/en/iam
The agents, skills and playbooks are the canonical files themselves, copied unchanged.
"""

from __future__ import annotations

from tpu_runtime.agent_defs import PLUGIN_NAME
from tpu_runtime.bundle.guard import DENIED_COMMANDS, PROTECTED_READS, PROTECTED_WRITES, command_text
from tpu_runtime.bundle.render import BundleFile, copy_file, json_file, mcp_servers
from tpu_runtime.bundle.source import GUARD_HOOK, CanonicalSource

AUTHOR = "tpu-agent contributors"
LICENSE = "Apache-2.0"
DESCRIPTION = (
    "Move PyTorch models onto Google Cloud TPUs with TorchTPU: a router agent and four specialists (model "
    "onboarding, diagnostics, Pallas kernels, cited docs) over the tpu-agent MCP servers, with a guard that "
    "keeps run approvals with the person."
)
SHORT_DESCRIPTION = (
    "A router agent and four specialists (model onboarding, diagnostics, Pallas kernels, cited docs) over "
    "the tpu-agent MCP servers, with a guard that keeps run approvals with the person."
)
KEYWORDS = ["tpu", "torch_tpu", "torchtpu", "pytorch", "pallas", "xla", "xprof", "mcp"]
MARKET_KEYWORDS = ["tpu", "torch_tpu", "pytorch", "pallas", "xla"]


def plugin_manifest(source: CanonicalSource) -> dict[str, object]:
    return {
        "name": PLUGIN_NAME,
        "version": source.version,
        "description": DESCRIPTION,
        "author": {"name": AUTHOR},
        "license": LICENSE,
        "keywords": KEYWORDS,
    }


def marketplace(source: CanonicalSource) -> dict[str, object]:
    return {
        "name": PLUGIN_NAME,
        "owner": {"name": AUTHOR},
        "description": "The tpu-agent plugin for Claude Code: PyTorch on Google Cloud TPUs with TorchTPU.",
        "plugins": [
            {
                "name": PLUGIN_NAME,
                "source": "./",
                "description": SHORT_DESCRIPTION,
                "version": source.version,
                "license": LICENSE,
                "category": "development",
                "keywords": MARKET_KEYWORDS,
            }
        ],
    }


def hooks() -> dict[str, object]:
    return {
        "description": "Refuse Bash commands that would approve a tpu-agent run: approval is the person's "
        "decision.",
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": f'python3 "${{CLAUDE_PLUGIN_ROOT}}/{GUARD_HOOK}"',
                            "timeout": 10,
                        }
                    ],
                }
            ]
        },
    }


def permissions() -> dict[str, object]:
    deny = [f"Bash({command_text(words)}:*)" for words in DENIED_COMMANDS]
    deny += [f"Edit({path})" for path in PROTECTED_WRITES]
    deny += [f"Read({path})" for path in PROTECTED_READS]
    return {"permissions": {"deny": deny}}


def build(source: CanonicalSource) -> list[BundleFile]:
    files = [
        json_file(".claude-plugin/plugin.json", plugin_manifest(source)),
        json_file(".claude-plugin/marketplace.json", marketplace(source)),
        json_file(".mcp.json", {"mcpServers": mcp_servers(source, with_type=True)}),
        json_file("hooks/hooks.json", hooks()),
        json_file("settings.json", permissions()),
        copy_file(source, GUARD_HOOK),
    ]
    files += [copy_file(source, path) for path in source.canonical_files("agents", "skills", "workflows")]
    return files
