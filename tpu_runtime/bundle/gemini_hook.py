#!/usr/bin/env python3
"""Gemini CLI BeforeTool hook: the tpu-agent approval guard, for Gemini's shell tool.

Gemini CLI sends `{"tool_name": "run_shell_command", "tool_input": {"command": ...}}` on stdin and treats
exit code 2 as "block this tool call", with stderr as the reason given to the model
(https://geminicli.com/docs/hooks/reference). The check itself is `deny_approvals.py`, the Claude Code
hook, which the bundle ships beside this file; this adapter only renames the tool.

Standard library only: it runs with whatever `python3` the user has, before tpu-agent is installed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

SHELL_TOOL = "run_shell_command"


def load_guard(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("deny_approvals", folder / "deny_approvals.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {folder / 'deny_approvals.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    raw = sys.stdin.read()
    guard = load_guard(Path(__file__).resolve().parent)
    try:
        hook_input = json.loads(raw)
    except ValueError:
        if "approv" in raw.lower():
            print("tpu-agent guard: unreadable hook input that mentions approval; refused", file=sys.stderr)
            return 2
        return 0
    if not isinstance(hook_input, dict) or hook_input.get("tool_name") != SHELL_TOOL:
        print("{}")
        return 0
    reason = guard.decide({**hook_input, "tool_name": "Bash"})
    if reason is None:
        print("{}")
        return 0
    print(reason, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
