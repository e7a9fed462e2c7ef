"""What the self-approval guard refuses, in one place, for every harness's permission format.

Approving a run is the person's decision (README, "Threat model"): an agent must not run the approve
command, create or use the approver key, or write tpu-agent's state. `hooks/deny_approvals.py` is the
thorough check for harnesses whose hooks can run it; these prefixes are what permission lists (Claude
Code's `permissions.deny`, Gemini CLI's `excludeTools`, Codex's rules, VS Code's terminal auto-approve)
can express. Prefix lists are a seatbelt: a shell can respell a command; the signature on each approval is
what holds.
"""

from __future__ import annotations

DENIED_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("tpu-agent", "approvals", "approve"),
    ("tpu-agent", "approver", "init"),
    ("tpu-agent", "approver", "sign-policy"),
    ("python", "-m", "tpu_runtime.cli.app", "approvals", "approve"),
    ("python3", "-m", "tpu_runtime.cli.app", "approvals", "approve"),
    ("sqlite3",),
)
"""Command prefixes (shell words) no agent may run."""

PROTECTED_WRITES: tuple[str, ...] = (
    "~/.local/state/tpu-agent/**",
    "~/.config/tpu-agent/policy.yaml",
    "~/.config/tpu-agent/policy.yaml.sig",
    "~/.config/tpu-agent/approver/**",
    "~/.ssh/**",
)
"""Paths no agent may edit: the state database, the signed policy, the approver key, the SSH keys."""

PROTECTED_READS: tuple[str, ...] = ("~/.config/tpu-agent/approver/**", "~/.ssh/**")
"""Paths no agent may read: the approver's encrypted key, and the SSH keys that reach the workers."""

REASON = (
    "Approving a tpu-agent run is the person's decision, made in their own terminal "
    "(tpu-agent approvals approve ID); an agent must not run it."
)


def command_text(words: tuple[str, ...]) -> str:
    return " ".join(words)
