"""Attack 4's seatbelts: the Claude Code hook and the plugin's permission rules. They catch the obvious
spellings; the guarantee rests on the signed approvals tested beside this file."""

from __future__ import annotations

import json

from tests.conftest import REPO
from tests.test_hook_guard import guard


def test_the_plugin_ships_deny_rules_for_the_state_folder_and_the_approve_command() -> None:
    deny = json.loads((REPO / "settings.json").read_text())["permissions"]["deny"]
    assert "Bash(tpu-agent approvals approve:*)" in deny
    assert "Bash(tpu-agent approver init:*)" in deny and "Bash(sqlite3:*)" in deny
    assert "Edit(~/.local/state/tpu-agent/**)" in deny
    assert "Edit(~/.config/tpu-agent/approver/**)" in deny and "Edit(~/.config/tpu-agent/policy.yaml)" in deny
    assert "Read(~/.ssh/**)" in deny  # SSH keys reach the workers without us (README, threat model)


def test_the_hook_blocks_the_tricks_that_got_through() -> None:
    for command in (
        "script -qec 'tpu-agent approvals approve r-1' /dev/null",
        'python3 -c \'import pty; pty.spawn(["tpu-agent", "approvals", "approve", "r-1"])\'',
        "cd ~/.local/state/tpu-agent && sqlite3 state.db 'DELETE FROM runs'",
        "echo dHB1LWFnZW50IGFwcHJvdmFscyBhcHByb3ZlIHItMQ== | base64 -d | sh",
        "python3 -c \"import sqlite3; sqlite3.connect('state.db').execute('UPDATE approvals')\"",
        "python -m runpy tpu_runtime.cli.app approvals approve r-1",
    ):
        hook_input = {"tool_name": "Bash", "tool_input": {"command": command}}
        assert guard.decide(hook_input) is not None, command
