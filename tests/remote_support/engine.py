"""A RemoteEngine whose state, targets, policy and approver key all live in one test folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tpu_runtime.remote.approvals import Approval
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.report import OutputLine, RunResult
from tpu_runtime.remote.store import Store

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn2c7b0GJ0lzgaFfR9Ti6kC4iyHBnzvYvX2m5n5k2rx"
LAB_WORKER: dict[str, Any] = {"name": "w0", "host": "10.0.0.2", "host_key": HOST_KEY}


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


def write_lab_target(folder: Path, hosts: list[dict[str, Any]] | None = None) -> Path:
    """`targets.yaml` in `folder` with one hosts target, `lab`, for user alice (default: `LAB_WORKER`)."""
    target = {"kind": "hosts", "user": "alice", "hosts": [LAB_WORKER] if hosts is None else hosts}
    (folder / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lab": target}}))
    return folder


async def collect(
    engine: RemoteEngine, approval: Approval, *, close: bool = True
) -> tuple[RunResult, list[OutputLine]]:
    """Run an approved request to its end: its result and its output lines in order (the engine closed after,
    unless the test runs more on it)."""
    lines: list[OutputLine] = []
    result: RunResult | None = None
    try:
        async for event in engine.execute(approval):
            if isinstance(event, OutputLine):
                lines.append(event)
            elif isinstance(event, RunResult):
                result = event
    finally:
        if close:
            await engine.aclose()
    assert result is not None
    return result, lines
