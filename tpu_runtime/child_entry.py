"""The child side of `tpu_runtime.sandbox`: call one function, write its result or a one-line failure."""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

_progress: TextIO | None = None


def report_progress(stage: str, fraction: float) -> None:
    """Tell the parent how far the job is; a no-op outside a child."""
    if _progress is not None:
        _progress.write(json.dumps({"stage": stage, "fraction": fraction}) + "\n")
        _progress.flush()


def peak_rss_bytes() -> int:
    """This process's peak resident set since its exec.

    `/proc/self/status` VmHWM restarts at exec; `getrusage`'s ru_maxrss does not (Linux carries the
    parent's peak across fork and exec), so a child of a large pytest or MCP server would report the
    parent's size as its own.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource  # no procfs (macOS): the best figure the platform has

    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux kibibytes
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def main(argv: list[str]) -> int:
    global _progress
    target, request, result, progress_fd = argv
    _progress = os.fdopen(int(progress_fd), "w")
    module_name, _, func_name = target.partition(":")
    answer: dict[str, Any]
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        answer = {"ok": True, "result": func(json.loads(Path(request).read_text()))}
    except MemoryError as exc:
        answer = {
            "ok": False,
            "kind": "memory",
            "message": f"out of host memory: {_one_line(exc)}",
            "detail": traceback.format_exc(),
        }
    except BaseException as exc:  # the user's code may raise anything, SystemExit included
        kind = getattr(exc, "failure_kind", "raised")
        answer = {
            "ok": False,
            "kind": kind,
            "message": getattr(exc, "one_line", None) or _one_line(exc),
            "detail": traceback.format_exc(),
        }
    Path(result).write_text(json.dumps(answer))
    return 0


if __name__ == "__main__":
    # Run as `python -m`, this module is `__main__`; code that imports `tpu_runtime.child_entry` to
    # report progress must reach this same module object, or its reports go nowhere.
    sys.modules["tpu_runtime.child_entry"] = sys.modules[__name__]
    sys.exit(main(sys.argv[1:]))
