#!/usr/bin/env python3
"""The tpu-agent approval guard for harnesses whose hooks speak another protocol than Claude Code's.

`python3 guard_hook.py gemini`: Gemini CLI's BeforeTool hook. Gemini sends
`{"tool_name": "run_shell_command", "tool_input": {"command": ...}}` on stdin and treats exit code 2 as
"block this tool call", with stderr as the reason given to the model
(https://geminicli.com/docs/hooks/reference).

`python3 guard_hook.py cursor`: Cursor's beforeShellExecution hook (`.cursor/hooks.json`, version 1, paths
relative to that file). Cursor sends `{"command": ..., "cwd": ...}` and reads
`{"permission": "allow"|"deny", "user_message": ..., "agent_message": ...}` from stdout
(https://cursor.com/docs/agent/hooks); `deny` holds in every run mode, so the guard never answers `ask`.

The check itself is `deny_approvals.py`, the Claude Code hook, which each bundle ships beside this file;
this adapter only translates the input and the answer. Standard library only: it runs with whatever
`python3` the user has, before tpu-agent is installed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

GEMINI_SHELL_TOOL = "run_shell_command"
UNREADABLE = "tpu-agent guard: unreadable hook input that mentions approval; refused"


def load_guard(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("deny_approvals", folder / "deny_approvals.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {folder / 'deny_approvals.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shell_command(harness: str, raw: str) -> str | None:
    """The shell command the hook input asks to run, or None when it runs none; ValueError if unreadable."""
    hook_input = json.loads(raw)
    if not isinstance(hook_input, dict):
        return None
    if harness == "gemini":
        tool_input = hook_input.get("tool_input")
        if hook_input.get("tool_name") != GEMINI_SHELL_TOOL or not isinstance(tool_input, dict):
            return None
        hook_input = tool_input
    command = hook_input.get("command")
    return command if isinstance(command, str) else None


def main(argv: list[str]) -> int:
    harness = argv[1] if len(argv) > 1 else ""
    if harness not in ("gemini", "cursor"):
        print("usage: guard_hook.py gemini|cursor", file=sys.stderr)
        return 2
    raw = sys.stdin.read()
    try:
        command = shell_command(harness, raw)
        reason = None
        if command is not None:
            guard = load_guard(Path(__file__).resolve().parent)
            reason = guard.decide({"tool_name": "Bash", "tool_input": {"command": command}})
    except ValueError:
        reason = UNREADABLE if "approv" in raw.lower() else None
    if harness == "cursor":
        answer = (
            {"permission": "allow"}
            if reason is None
            else {"permission": "deny", "user_message": reason, "agent_message": reason}
        )
        print(json.dumps(answer))
        return 0
    if reason is None:
        print("{}")
        return 0
    print(reason, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
