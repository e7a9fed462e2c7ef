"""Every store that keeps state between runs lives under one data folder, moved by one variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.kernels import tune
from tpu_runtime.knowledge.store import index_dir
from tpu_runtime.onboard.op_table import user_table_dir
from tpu_runtime.user_data import DATA_ENV, data_dir


def test_the_variable_moves_every_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "~data"))
    assert data_dir() == tmp_path / "~data"
    assert index_dir() == tmp_path / "~data" / "kb"
    assert user_table_dir() == tmp_path / "~data" / "op_tables"
    run = tune.default_run_dir(Path("k.py"), "v6e", {"block": [128, 256]})
    assert run.parent == tmp_path / "~data" / "kernel-tune"


def test_without_it_the_platform_user_data_folder_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ENV, raising=False)
    assert data_dir().name == "tpu-agent"
    assert index_dir().parent == data_dir()
