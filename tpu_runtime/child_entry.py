"""The child side of `tpu_runtime.sandbox`: call one function, write its result or a one-line failure."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

_progress: TextIO | None = None

#: Set to 1 in the child's environment to leave its network alone (a target that needs loopback).
KEEP_NETWORK_ENV = "TPU_AGENT_CHILD_KEEP_NETWORK"
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
#: What `cut_network` achieved in this process; the parent reports it (`run_child` result "_child").
network_isolation = "not attempted"


def cut_network() -> str:
    """Put this process in a network namespace of its own, so the user's code cannot reach any host.

    Must run while the process is single-threaded (before torch or jax start threads). As root a plain
    network namespace; otherwise inside a user namespace that maps only the caller's own uid and gid, so
    files stay theirs. Where the kernel refuses (containers without user namespaces, not Linux), the
    child runs with the host's network and says so.
    """
    if not sys.platform.startswith("linux"):
        return f"network not cut: {sys.platform} has no network namespaces"
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNET if os.geteuid() == 0 else _CLONE_NEWUSER | _CLONE_NEWNET
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        return f"network not cut: the kernel refused a network namespace ({os.strerror(ctypes.get_errno())})"
    if flags & _CLONE_NEWUSER:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    return "no network: a network namespace of its own, with no interface up"


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
    global _progress, network_isolation
    target, request, result, progress_fd = argv
    if os.environ.get(KEEP_NETWORK_ENV) != "1":
        network_isolation = cut_network()
    _progress = os.fdopen(int(progress_fd), "w")
    module_name, _, func_name = target.partition(":")
    answer: dict[str, Any]
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        answer = {"ok": True, "result": func(json.loads(Path(request).read_text()))}
        answer["network"] = network_isolation
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
