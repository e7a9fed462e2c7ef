"""The user's tpu-agent data folder, one for every store that keeps state between runs (the knowledge
index, measured op tables, kernel tuning records), so that one variable moves them all."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "data_dir"]

DATA_ENV = "TPU_AGENT_DATA_DIR"


def data_dir() -> Path:
    """`$TPU_AGENT_DATA_DIR`, else the user data folder platformdirs gives for 'tpu-agent' (imported here:
    most commands never need it)."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("tpu-agent", appauthor=False))
