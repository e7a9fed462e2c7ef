"""What every process that loads a user's kernel file starts with: its options, a watch on its parent,
the environment JAX needs, and the live progress pipe.

A leaf of `tpu_runtime.kernels` (it imports no other kernels module at load time), so the stage modules,
the check and the tuner can all share it without importing one another.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from pydantic import BaseModel

from tpu_runtime.kernels.report import CPU_STAGES, StageName
from tpu_runtime.progress import StageProgressFn


class CheckOptions(BaseModel):
    """What one check runs with; the parent sends this to the child as JSON."""

    file: str
    params: dict[str, Any] = {}
    shapes: list[dict[str, int]] | None = None
    target_shape: dict[str, int] | None = None
    generations: list[str] = ["v5e", "v5p", "v6e", "tpu7x"]
    stages: list[StageName] = list(CPU_STAGES)
    seed: int | None = None
    held_out: bool = True


def watch_parent() -> None:
    """Exit when the process that started this child dies (a killed CLI or tuner leaves no orphans)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(3)
            time.sleep(0.5)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def prepare_child() -> None:
    """Environment and quiet logging for a child that runs kernels (before JAX is imported)."""
    import logging

    from tpu_runtime.kernels.topology import prepare_libtpu

    prepare_libtpu()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger("jax").setLevel(logging.ERROR)


def child_progress() -> StageProgressFn:
    """The progress reporter of the running child.

    `python -m tpu_runtime.child_entry` runs that module as `__main__`, so a fresh `import
    tpu_runtime.child_entry` gets a second copy whose pipe was never opened; the live one is `__main__`'s.
    """
    main = sys.modules.get("__main__")
    live = getattr(main, "report_progress", None)
    if callable(live) and getattr(main, "_progress", None) is not None:
        return live
    from tpu_runtime.child_entry import report_progress

    return report_progress
