"""Shared test set-up: the environment every test process must have.

libtpu must not query the cloud metadata server, JAX stays on the CPU, nothing downloads from a hub.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture
def anyio_backend() -> str:
    """The event loop the MCP tests' `pytest.mark.anyio` runs on: asyncio, the loop the MCP SDK's stdio
    servers use."""
    return "asyncio"


@pytest.fixture
def write_model(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a model file (dedented source) into a fresh folder and return its path (`name` may hold
    subfolders, made as needed)."""

    def write(source: str, name: str = "model.py") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    return write


@pytest.fixture
def new_children() -> Callable[[], list[psutil.Process]]:
    """The live processes this test left behind: children (at any depth) that did not exist when it began.

    Session-wide helpers (the security suite's sshd farm) are children of pytest too; they are not leaks.
    """
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}

    def alive() -> list[psutil.Process]:
        left = []
        for proc in me.children(recursive=True):
            if proc.pid in before:
                continue
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    left.append(proc)
            except psutil.NoSuchProcess:
                continue
        return left

    return alive
