#!/usr/bin/env python3
"""Cursor beforeShellExecution hook: the tpu-agent approval guard, for Cursor's agent terminal.

Cursor runs the commands listed in `.cursor/hooks.json` (format version 1; paths relative to that file)
before each shell command, with `{"hook_event_name": "beforeShellExecution", "command": ..., "cwd": ...}`
on stdin, and reads `{"permission": "allow"|"deny"|"ask", "user_message": ..., "agent_message": ...}` from
stdout (https://cursor.com/docs/agent/hooks). `deny` is refused in every run mode, so the guard answers
`deny`, never `ask`. The check itself is `deny_approvals.py`, the Claude Code hook, shipped beside this
file; this adapter only translates Cursor's input and answer.

Standard library only: it runs with whatever `python3` the user has, before tpu-agent is installed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType


def load_guard(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("deny_approvals", folder / "deny_approvals.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {folder / 'deny_approvals.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer(reason: str | None) -> dict[str, str]:
    if reason is None:
        return {"permission": "allow"}
    return {"permission": "deny", "user_message": reason, "agent_message": reason}


def main() -> int:
    raw = sys.stdin.read()
    guard = load_guard(Path(__file__).resolve().parent)
    try:
        hook_input = json.loads(raw)
    except ValueError:
        unreadable = "tpu-agent guard: unreadable hook input that mentions approval; refused"
        print(json.dumps(answer(unreadable if "approv" in raw.lower() else None)))
        return 0
    command = hook_input.get("command") if isinstance(hook_input, dict) else None
    if not isinstance(command, str):
        print(json.dumps(answer(None)))
        return 0
    reason = guard.decide({"tool_name": "Bash", "tool_input": {"command": command}})
    print(json.dumps(answer(reason)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
