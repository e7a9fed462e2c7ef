"""Where the user's remote-execution config and state live.

Config (`targets.yaml`, `policy.yaml` and its signature, `approver/` with the person's encrypted
approver key) is the user's to edit; state (`state.db`: requests, approvals,
runs, attempts and the audit log; `runs/` output logs; `downloads/`) is ours. `TPU_AGENT_HOME` puts both
in one folder (tests, or a project-local setup).
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TPU_AGENT_HOME"


def config_dir() -> Path:
    """`$TPU_AGENT_HOME`, else the platform's user config folder (~/.config/tpu-agent on Linux)."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("tpu-agent"))


def state_dir() -> Path:
    """`$TPU_AGENT_HOME`, else the platform's user state folder (~/.local/state/tpu-agent on Linux)."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("tpu-agent"))


def targets_file() -> Path:
    return config_dir() / "targets.yaml"


def policy_file() -> Path:
    return config_dir() / "policy.yaml"


def approver_dir() -> Path:
    """Where the person's approver key lives (encrypted private key and its public half)."""
    return config_dir() / "approver"


def state_db() -> Path:
    return state_dir() / "state.db"
