"""The adversarial suite: each attack on the approval path, tried against real sshd workers on loopback.

Nothing is mocked but the person: engine-level tests unlock the person's key with the passphrase (as the
CLI does after they typed it), CLI tests type it into a real pseudo-terminal. Everything the attacker does
is what a coding agent running as the same user can do: write the state file and config, run programs
under a fake terminal, run its own MCP client. Run inside a loopback-only network namespace:
`unshare -n sh -c 'ip link set lo up; python -m pytest -q tests/security'`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.engine import engine_at
from tests.remote_support.sshd import SshdFarm, farm_or_skip
from tpu_runtime.remote.approvals import Approval
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.report import OutputLine, RunResult

WORKERS = 2


@pytest.fixture(scope="session")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    yield from farm_or_skip(WORKERS, tmp_path_factory.mktemp("security-farm"), "the security tests")


@pytest.fixture
def home(farm: SshdFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's tpu-agent folder: targets, their approver key (the one the workers pinned)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("TPU_AGENT_HOME", str(folder))
    (folder / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    person.share_key(person.farm_key_dir(farm.session), folder)
    return folder


def make_engine(home: Path, **kw: Any) -> RemoteEngine:
    return engine_at(home, **kw)


@pytest.fixture
def engine(home: Path) -> RemoteEngine:
    return make_engine(home)


def run(engine: RemoteEngine, approval: Approval) -> tuple[RunResult, list[OutputLine]]:
    """Start the approved run, collect its output, close the engine's connections."""

    async def go() -> tuple[RunResult, list[OutputLine]]:
        try:
            run_id = await engine.start(approval)
            lines = [e async for e in engine.stream(run_id) if isinstance(e, OutputLine)]
            return await engine.wait(run_id), lines
        finally:
            await engine.aclose()

    return asyncio.run(go())


def marker_command(marker: Path) -> list[str]:
    """A command whose only effect is a file: proof that it ran."""
    return ["sh", "-c", f"echo ran >> {marker}"]
