"""A RemoteEngine whose state, targets, policy and approver key all live in one test folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.store import Store


def engine_at(folder: Path, **kw: Any) -> RemoteEngine:
    """The engine a person with tpu-agent home `folder` gets: `state.db`, `targets.yaml`, `policy.yaml`,
    `approver` under it."""
    return RemoteEngine(
        store=Store(folder / "state.db"),
        targets_path=folder / "targets.yaml",
        policy_path=folder / "policy.yaml",
        state_path=folder,
        approver_path=folder / "approver",
        **kw,
    )
